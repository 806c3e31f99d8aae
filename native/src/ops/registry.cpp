#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "mnnpy/op_registry.h"

namespace mnnpy {

namespace {
std::unordered_map<std::string, std::unique_ptr<OpDef>>& registry() {
  static std::unordered_map<std::string, std::unique_ptr<OpDef>> ops;
  return ops;
}
}  // namespace

OpRegistrar::OpRegistrar(OpDef def) {
  auto name = def.name;
  registry()[name] = std::make_unique<OpDef>(std::move(def));
}

namespace {
std::unordered_map<std::string, GradFn>& grad_rules() {
  static std::unordered_map<std::string, GradFn> rules;
  return rules;
}
}  // namespace

GradRegistrar::GradRegistrar(const std::string& op_name, GradFn fn) { grad_rules()[op_name] = std::move(fn); }

const GradFn* find_grad(const std::string& op_name) {
  auto it = grad_rules().find(op_name);
  return it == grad_rules().end() ? nullptr : &it->second;
}

const OpDef* find_op(const std::string& name) {
  auto it = registry().find(name);
  return it == registry().end() ? nullptr : it->second.get();
}

const OpDef& get_op(const std::string& name) {
  const OpDef* op = find_op(name);
  if (!op) throw ValueError("unknown op '" + name + "'");
  return *op;
}

std::vector<std::string> registered_op_names() {
  std::vector<std::string> names;
  for (auto& kv : registry()) names.push_back(kv.first);
  std::sort(names.begin(), names.end());
  return names;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw ValueError("operands could not be broadcast together with shapes " + shape_str(a) + " " +
                       shape_str(b));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t normalize_axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    throw IndexError("axis " + std::to_string(axis) + " is out of bounds for array of dimension " +
                     std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t a : axes) {
    const int64_t n = normalize_axis(a, rank);
    if (std::find(out.begin(), out.end(), n) != out.end()) throw ValueError("duplicate value in 'axis'");
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace mnnpy
