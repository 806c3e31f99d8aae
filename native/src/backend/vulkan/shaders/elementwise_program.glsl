// What the elementwise shaders share (elementwise_body.glsl, elementwise_typed_body.glsl): the
// program as specialization constants, and where an element of a broadcast input is. Included
// after the parameter buffer `p` (the output's dims at [0, 8), then 8 strides per input).
// Specialization constant 3 is the including shader's own.
layout(constant_id = 0) const int kCount = 1;   // instructions
layout(constant_id = 1) const int kDense = 0;   // bit k: input k has the output's shape
layout(constant_id = 2) const int kRank = 1;
// Instruction t: opcode, then operands a, b, c, at constant ids 4 + 4t ... 7 + 4t.
#define INSTRUCTION(t, id0, id1, id2, id3) \
  layout(constant_id = id0) const int op##t = 0; \
  layout(constant_id = id1) const int a##t = 0; \
  layout(constant_id = id2) const int b##t = 0; \
  layout(constant_id = id3) const int c##t = 0;
INSTRUCTION(0, 4, 5, 6, 7) INSTRUCTION(1, 8, 9, 10, 11) INSTRUCTION(2, 12, 13, 14, 15) INSTRUCTION(3, 16, 17, 18, 19)
INSTRUCTION(4, 20, 21, 22, 23) INSTRUCTION(5, 24, 25, 26, 27) INSTRUCTION(6, 28, 29, 30, 31) INSTRUCTION(7, 32, 33, 34, 35)
INSTRUCTION(8, 36, 37, 38, 39) INSTRUCTION(9, 40, 41, 42, 43) INSTRUCTION(10, 44, 45, 46, 47) INSTRUCTION(11, 48, 49, 50, 51)
INSTRUCTION(12, 52, 53, 54, 55) INSTRUCTION(13, 56, 57, 58, 59) INSTRUCTION(14, 60, 61, 62, 63) INSTRUCTION(15, 64, 65, 66, 67)
INSTRUCTION(16, 68, 69, 70, 71) INSTRUCTION(17, 72, 73, 74, 75) INSTRUCTION(18, 76, 77, 78, 79) INSTRUCTION(19, 80, 81, 82, 83)
INSTRUCTION(20, 84, 85, 86, 87) INSTRUCTION(21, 88, 89, 90, 91) INSTRUCTION(22, 92, 93, 94, 95) INSTRUCTION(23, 96, 97, 98, 99)
INSTRUCTION(24, 100, 101, 102, 103) INSTRUCTION(25, 104, 105, 106, 107) INSTRUCTION(26, 108, 109, 110, 111)
INSTRUCTION(27, 112, 113, 114, 115) INSTRUCTION(28, 116, 117, 118, 119) INSTRUCTION(29, 120, 121, 122, 123)
INSTRUCTION(30, 124, 125, 126, 127) INSTRUCTION(31, 128, 129, 130, 131)

const int kMaxRank = 8, kMaxInstructions = 32, kHeader = kMaxRank;

// The element of input k that output element i reads: i itself for an input of the output's
// shape, else through its broadcast strides (0 where it is broadcast).
uint input_offset(int k, uint i) {
  uint offset = i;
  if ((kDense & (1 << k)) == 0) {
    const int strides = kHeader + k * kMaxRank;
    offset = 0u;
    uint rest = i;
    for (int d = kRank - 1; d >= 0; --d) {
      const uint dim = uint(p[d]);
      offset += (rest % dim) * uint(p[strides + d]);
      rest /= dim;
    }
  }
  return offset;
}
