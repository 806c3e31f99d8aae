#include "runtime/fused_elementwise.h"

namespace mnnpy {

// Off by default: on the machines measured, plain stores into reused blocks were as fast or faster.
std::atomic<bool> g_streaming_stores{false};
std::atomic<bool> g_fuse_mul_add{true};

namespace {

// A float multiply whose only use is an add becomes one fused multiply-add, so the product is
// never rounded or stored (NumPy rounds the product first; the difference is within an ulp of
// the product).
std::vector<EwInstr> fuse_multiply_add(std::vector<EwInstr> program) {
  const int n = (int)program.size();
  std::vector<int> uses(n, 0);
  for (const EwInstr& ins : program) {
    if (ins.arity == EwArity::None) continue;
    for (int r : {ins.a, ins.b, ins.c}) if (r >= 0) ++uses[r];
  }
  std::vector<bool> removed(n, false);
  auto single_use_product = [&](int r, DType dt) {
    const EwInstr& m = program[r];
    return m.arity == EwArity::Binary && m.code == ew::kMul && m.in_dtype == dt && uses[r] == 1 && !removed[r];
  };
  for (EwInstr& ins : program) {
    if (ins.arity != EwArity::Binary || ins.code != ew::kAdd || (ins.in_dtype != DType::Float32 && ins.in_dtype != DType::Float64)) continue;
    const int product = single_use_product(ins.a, ins.in_dtype) ? ins.a
                        : single_use_product(ins.b, ins.in_dtype) ? ins.b : -1;
    if (product < 0) continue;
    const int addend = product == ins.a ? ins.b : ins.a;
    ins.arity = EwArity::MulAdd;
    ins.a = program[product].a;
    ins.b = program[product].b;
    ins.c = addend;
    removed[product] = true;
  }
  std::vector<int> new_index(n, -1);
  std::vector<EwInstr> fused;
  for (int i = 0; i < n; ++i) {
    if (removed[i]) continue;
    new_index[i] = (int)fused.size();
    fused.push_back(program[i]);
  }
  for (EwInstr& ins : fused) {
    if (ins.arity == EwArity::None) continue;
    for (int* r : {&ins.a, &ins.b, &ins.c}) if (*r >= 0) *r = new_index[*r];
  }
  return fused;
}

}  // namespace

std::vector<EwInstr> prepare_elementwise_program(std::vector<EwInstr> program) {
  if (!g_fuse_mul_add) return program;
  return fuse_multiply_add(std::move(program));
}

}  // namespace mnnpy
