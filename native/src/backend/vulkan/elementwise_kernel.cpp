// The fused elementwise program on Vulkan. Float32 programs of the codes the shader knows
// (shaders/elementwise_body.glsl); programs with int32, int64 or bool values take the typed shader
// (shaders/elementwise_typed_body.glsl), which has the cheap float32 codes, casts, comparisons,
// predicates, Where, and the integer and bool codes. At most 8 inputs, rank 8 and 32
// instructions; anything else is left to the CPU (nullptr). Programs with MulAdd take a shader
// that rounds it once, float32 programs with math functions beyond exp
// (shaders/elementwise_math.glsl) one that has them.
#include "backend/vulkan/elementwise_kernel.h"

#include <algorithm>
#include <map>

#include "backend/vulkan/vulkan_pipelines.h"

namespace mnnpy {
namespace vulkan {

namespace {

const uint32_t kElementwiseSpirv[] =
#include "backend/vulkan/shaders/elementwise.spv.inc"
    ;
const uint32_t kExactMulAddSpirv[] =
#include "backend/vulkan/shaders/elementwise_exact_mul_add.spv.inc"
    ;
const uint32_t kMathSpirv[] =
#include "backend/vulkan/shaders/elementwise_math.spv.inc"
    ;
const uint32_t kMathExactMulAddSpirv[] =
#include "backend/vulkan/shaders/elementwise_math_exact_mul_add.spv.inc"
    ;
const uint32_t kTypedSpirv[] =
#include "backend/vulkan/shaders/elementwise_typed.spv.inc"
    ;
const uint32_t kTypedInt64Spirv[] =
#include "backend/vulkan/shaders/elementwise_typed_int64.spv.inc"
    ;
const uint32_t kTypedLongSpirv[] =
#include "backend/vulkan/shaders/elementwise_typed_long.spv.inc"
    ;
const uint32_t kTypedInt64LongSpirv[] =
#include "backend/vulkan/shaders/elementwise_typed_int64_long.spv.inc"
    ;

constexpr int kMaxRank = 8, kMaxInputs = 8, kMaxInstructions = 32;
// Typed programs up to this long take the typed shaders of as many steps (they compile faster).
constexpr size_t kShortTypedProgram = 8;
// The grid's size: each invocation loops over every (256 * kMaxGroups)-th element, so elements
// stay below 2^31 for its index never to wrap.
constexpr uint32_t kMaxGroups = 8192;

// Opcodes of shaders/elementwise_body.glsl; those from kFirstHeavy (HEAVY there) run in the math
// shaders only.
constexpr int kMulAddOpcode = 63, kFirstHeavy = 64;

// The shader's opcode of an instruction; -1 where it has none.
int opcode(const EwInstr& ins) {
  using namespace ew;
  static const std::map<int, int> unary = {
      {kNeg, 1},     {kAbs, 2},     {kSquare, 3},    {kSqrt, 4},      {kRsqrt, 5},      {kReciprocal, 6},  {kExp, 7},
      {kSigmoid, 8}, {kRelu, 9},    {kRelu6, 10},    {kFloor, 11},    {kCeil, 12},      {kRint, 13},       {kTrunc, 14},
      {kSign, 15},   {kCopy, 16},   {kExpm1, 64},    {kExp2, 65},     {kLog, 66},       {kLog1p, 67},      {kLog2, 68},
      {kLog10, 69},  {kSin, 70},    {kCos, 71},      {kTan, 72},      {kAsin, 73},      {kAcos, 74},       {kAtan, 75},
      {kSinh, 76},   {kCosh, 77},   {kTanh, 78},     {kAsinh, 79},    {kAcosh, 80},     {kAtanh, 81},      {kErf, 82},
      {kErfc, 83},   {kGelu, 84},   {kGeluTanh, 85}, {kSoftplus, 86}, {kSelu, 87},      {kCbrt, 88},       {kSoftsign, 89}};
  static const std::map<int, int> binary = {
      {kAdd, 32},  {kSub, 33},  {kMul, 34},         {kDiv, 35},  {kMaximum, 36}, {kMinimum, 37},   {kFmax, 38},
      {kFmin, 39}, {kSquaredDiff, 40}, {kPow, 96},  {kAtan2, 97}, {kHypot, 98},  {kCopysign, 99}, {kNextafter, 100}};
  switch (ins.arity) {
    case EwArity::None: return 0;
    case EwArity::MulAdd: return kMulAddOpcode;
    case EwArity::Unary: {
      auto it = unary.find(ins.code);
      return it == unary.end() ? -1 : it->second;
    }
    case EwArity::Binary: {
      auto it = binary.find(ins.code);
      return it == binary.end() ? -1 : it->second;
    }
    default: return -1;
  }
}

// The typed shader's kinds of register (shaders/elementwise_typed_body.glsl); -1 for other dtypes.
enum Kind : int { kFloat = 0, kInt = 1, kLong = 2, kBool = 3 };
int kind_of(DType dt) {
  switch (dt) {
    case DType::Float32: return kFloat;
    case DType::Int32: return kInt;
    case DType::Int64: return kLong;
    case DType::Bool: return kBool;
    default: return -1;
  }
}

// The typed shader's opcodes past the float ones (opcode() below 64).
enum TypedOpcode : int {
  kCast = 128, kSelect = 129,
  kIsNanOp = 130, kIsInfOp, kIsFiniteOp, kSignbitOp, kLogicalNotOp,       // bool results
  kEqualOp = 135,  // to kLogicalXor in BinaryCode order (bool results)
  kIntNeg = 144, kIntAbs, kIntSign, kIntSquare, kIntReciprocal, kIntRelu, kIntRelu6, kBitNot, kIntCopy,
  kIntAdd = 160, kIntSub, kIntMul, kIntFloorDiv, kIntMod, kIntFmod, kIntPow, kIntMax, kIntMin, kIntSquaredDiff,
  kBitAndOp, kBitOrOp, kBitXorOp, kShiftLeftOp, kShiftRightOp, kGcdOp, kLcmOp,
};

// An instruction's typed-shader opcode for operands of kind `in` (the CPU's meaning of the code on
// that dtype, backend/cpu/elementwise.cpp); -1 where the shader has none.
int typed_opcode(const EwInstr& ins, int in) {
  using namespace ew;
  switch (ins.arity) {
    case EwArity::None: return 0;
    case EwArity::Cast: return kCast;
    case EwArity::Ternary: return kSelect;
    case EwArity::MulAdd: return in == kFloat ? kMulAddOpcode : -1;
    case EwArity::Unary: {
      static const std::map<int, int> predicates = {
          {kIsNan, kIsNanOp}, {kIsInf, kIsInfOp}, {kIsFinite, kIsFiniteOp}, {kSignbit, kSignbitOp}, {kLogicalNot, kLogicalNotOp}};
      if (unary_returns_bool(ins.code)) return predicates.at(ins.code);
      if (in == kFloat) {
        const int op = opcode(ins);
        return op < kFirstHeavy ? op : -1;
      }
      if (in == kBool) return ins.code == kBitwiseNot ? kLogicalNotOp : kIntCopy;  // any other code copies
      static const std::map<int, int> integer = {
          {kNeg, kIntNeg},   {kAbs, kIntAbs},         {kSign, kIntSign},   {kSquare, kIntSquare}, {kReciprocal, kIntReciprocal},
          {kRelu, kIntRelu}, {kRelu6, kIntRelu6},     {kBitwiseNot, kBitNot}, {kFloor, kIntCopy},  {kCeil, kIntCopy},
          {kRint, kIntCopy}, {kTrunc, kIntCopy},      {kCopy, kIntCopy}};
      auto it = integer.find(ins.code);
      return it == integer.end() ? -1 : it->second;
    }
    case EwArity::Binary: {
      if (binary_returns_bool(ins.code)) return kEqualOp + (ins.code - kEqual);
      if (in == kFloat) {
        const int op = opcode(ins);
        return op < kFirstHeavy ? op : -1;
      }
      if (in == kBool) {  // + and max are or, * and min are and, - is xor
        switch (ins.code) {
          case kAdd: case kMaximum: case kFmax: case kBitOr: return kBitOrOp;
          case kMul: case kMinimum: case kFmin: case kBitAnd: return kBitAndOp;
          case kSub: case kBitXor: return kBitXorOp;
          default: return -1;
        }
      }
      static const std::map<int, int> integer = {
          {kAdd, kIntAdd},     {kSub, kIntSub},   {kMul, kIntMul},           {kFloorDiv, kIntFloorDiv}, {kMod, kIntMod},
          {kFmod, kIntFmod},   {kPow, kIntPow},   {kMaximum, kIntMax},       {kFmax, kIntMax},          {kMinimum, kIntMin},
          {kFmin, kIntMin},    {kSquaredDiff, kIntSquaredDiff}, {kBitAnd, kBitAndOp}, {kBitOr, kBitOrOp},
          {kBitXor, kBitXorOp}, {kShiftLeft, kShiftLeftOp}, {kShiftRight, kShiftRightOp}, {kGcd, kGcdOp}, {kLcm, kLcmOp}};
      auto it = integer.find(ins.code);
      return it == integer.end() ? -1 : it->second;
    }
  }
  return -1;
}

struct Spirv {
  const uint32_t* code;
  size_t size;
};

// The shader for a program's kinds of instructions: the math functions only where the program
// has them (a driver compiles everything a shader could run before it specializes), MulAdd
// through float64 only where it has that.
Spirv shader_for(bool heavy, bool mul_add) {
  if (heavy) return mul_add ? Spirv{kMathExactMulAddSpirv, sizeof(kMathExactMulAddSpirv)} : Spirv{kMathSpirv, sizeof(kMathSpirv)};
  return mul_add ? Spirv{kExactMulAddSpirv, sizeof(kExactMulAddSpirv)} : Spirv{kElementwiseSpirv, sizeof(kElementwiseSpirv)};
}

class ElementwiseKernel : public VulkanKernel {
 public:
  // `program`: the shader's specialization constants (the program); `params`: the output's dims
  // and each input's broadcast strides; `shader`: shader_for the program; `units`: the output
  // words (or elements) the invocations share out.
  ElementwiseKernel(const std::vector<uint32_t>& program, const std::vector<int32_t>& params, uint64_t n, uint64_t units,
                    Spirv shader)
      : params_(params.data(), params.size() * sizeof(int32_t)), n_(n), units_(units),
        pipeline_(pipeline_for(shader.code, shader.size, 2 + kMaxInputs, sizeof(uint32_t), program)) {}

  void execute(const KernelArgs& args, void*) const override {
    if (n_ == 0) return;
    // Whole words: the typed shader reads and writes bool tensors a word at a time.
    std::vector<BufferRange> buffers{params_.range(), resolve_words(args.outputs[0]->data, args.outputs[0]->nbytes())};
    for (int k = 0; k < kMaxInputs; ++k) {
      buffers.push_back(k < (int)args.inputs.size() ? resolve_words(args.inputs[k]->data, args.inputs[k]->nbytes())
                                                    : BufferRange{});
    }
    const uint32_t n = (uint32_t)n_;
    pipeline_->dispatch(buffers, &n, std::min<uint32_t>(groups_for(units_, 256), kMaxGroups));
  }

 private:
  ParamBuffer params_;
  uint64_t n_, units_;
  std::shared_ptr<Pipeline> pipeline_;
};

// The typed shader's specialization constants after the header (shaders/elementwise_typed_body.glsl):
// per instruction its opcode word (opcode | in kind << 8 | out kind << 10) and operands; false
// where the shader cannot run the program. `long_or_mul_add`: whether it needs the int64 shader.
bool typed_program(const std::vector<EwInstr>& program, const std::vector<TensorType>& input_types,
                   std::vector<uint32_t>& spec, bool& long_or_mul_add) {
  long_or_mul_add = false;
  for (const EwInstr& ins : program) {
    const bool load = ins.arity == EwArity::None;
    const int in = load ? kind_of(input_types[ins.a].dtype) : kind_of(ins.in_dtype);
    const int out = load ? in : kind_of(ins.out_dtype);
    if (in < 0 || out < 0) return false;
    const int op = typed_opcode(ins, in);
    if (op < 0) return false;
    // The result's kind as the shader makes it: anything else is not a program of these codes.
    const bool bool_result = (op >= kIsNanOp && op < kIntNeg) || (op == kLogicalNotOp);
    if (!load && ins.arity != EwArity::Cast && out != (bool_result ? kBool : in)) return false;
    long_or_mul_add = long_or_mul_add || in == kLong || out == kLong || ins.arity == EwArity::MulAdd;
    spec.insert(spec.end(), {(uint32_t)(op | in << 8 | out << 10), (uint32_t)std::max(ins.a, 0), (uint32_t)std::max(ins.b, 0),
                             (uint32_t)std::max(ins.c, 0)});
  }
  return true;
}

}  // namespace

std::unique_ptr<Kernel> make_elementwise_kernel(const std::vector<EwInstr>& program, const std::vector<TensorType>& input_types,
                                                const TensorType& output_type) {
  const Shape& shape = output_type.shape;
  const int out_kind = kind_of(output_type.dtype);
  if (out_kind < 0 || shape.size() > kMaxRank || input_types.size() > kMaxInputs || program.size() > kMaxInstructions ||
      output_type.numel() > (int64_t(1) << 31)) {
    return nullptr;
  }
  bool typed = out_kind != kFloat;
  for (const TensorType& t : input_types) typed = typed || t.dtype != DType::Float32;
  for (const EwInstr& ins : program) {
    typed = typed || (ins.arity != EwArity::None && (ins.in_dtype != DType::Float32 || ins.out_dtype != DType::Float32));
  }
  // Specialization constants (shaders/elementwise_program.glsl): instruction count, dense inputs,
  // rank, then the shader's own (float: heavy instructions; typed: the output's kind), then
  // opcode and operands per instruction (absent operands read register 0).
  std::vector<uint32_t> spec{(uint32_t)program.size(), 0, (uint32_t)shape.size(), 0};
  std::vector<int32_t> params(kMaxRank + kMaxRank * input_types.size(), 0);
  for (size_t d = 0; d < shape.size(); ++d) params[d] = (int32_t)shape[d];
  for (size_t k = 0; k < input_types.size(); ++k) {
    const Shape& in = input_types[k].shape;
    if (in == shape) spec[1] |= 1u << k;
    // Broadcast strides against the output's dims: 0 where the input has size 1 or lacks the axis.
    int64_t stride = 1;
    for (int64_t d = (int64_t)in.size() - 1, o = (int64_t)shape.size() - 1; d >= 0; --d, --o) {
      params[kMaxRank + kMaxRank * k + o] = in[d] == 1 ? 0 : (int32_t)stride;
      stride *= in[d];
    }
  }
  const uint64_t n = (uint64_t)output_type.numel();
  if (typed) {
    bool long_or_mul_add = false;
    if (!typed_program(program, input_types, spec, long_or_mul_add)) return nullptr;
    spec[3] = (uint32_t)out_kind;
    // The int64 shader has MulAdd through float64 too.
    if (long_or_mul_add && !(context()->int64 && context()->float64)) return nullptr;
    const bool short_program = program.size() <= kShortTypedProgram;
    const Spirv shader = long_or_mul_add ? (short_program ? Spirv{kTypedInt64Spirv, sizeof(kTypedInt64Spirv)}
                                                          : Spirv{kTypedInt64LongSpirv, sizeof(kTypedInt64LongSpirv)})
                                         : (short_program ? Spirv{kTypedSpirv, sizeof(kTypedSpirv)}
                                                          : Spirv{kTypedLongSpirv, sizeof(kTypedLongSpirv)});
    return std::make_unique<ElementwiseKernel>(spec, params, n, out_kind == kBool ? (n + 3) / 4 : n, shader);
  }
  bool mul_add = false;
  uint32_t heavy = 0;
  for (const EwInstr& ins : program) {
    const int op = opcode(ins);
    mul_add = mul_add || ins.arity == EwArity::MulAdd;
    if (op < 0) return nullptr;
    spec.insert(spec.end(), {(uint32_t)op, (uint32_t)std::max(ins.a, 0), (uint32_t)std::max(ins.b, 0),
                             (uint32_t)std::max(ins.c, 0)});
    heavy += op >= kFirstHeavy ? 1 : 0;
  }
  spec[3] = heavy;
  // MulAdd rounds once only through float64: without it the program stays on the CPU.
  if (mul_add && !context()->float64) return nullptr;
  return std::make_unique<ElementwiseKernel>(spec, params, n, n, shader_for(heavy > 0, mul_add));
}

}  // namespace vulkan
}  // namespace mnnpy
