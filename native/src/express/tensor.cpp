#include "mnnpy/tensor.h"

#include <cstdlib>

namespace mnnpy {

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ", ";
    r += std::to_string(s[i]);
  }
  if (s.size() == 1) r += ",";
  return r + ")";
}

std::shared_ptr<Tensor> Tensor::allocate(const TensorType& t) {
  auto tensor = std::make_shared<Tensor>();
  tensor->type = t;
  size_t bytes = (t.nbytes() + 63) & ~size_t(63);
  void* p = std::aligned_alloc(64, bytes ? bytes : 64);
  if (!p) throw std::bad_alloc();
  tensor->data = p;
  tensor->owner = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  return tensor;
}

}  // namespace mnnpy
