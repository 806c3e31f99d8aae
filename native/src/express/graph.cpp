#include "mnnpy/graph.h"

#include <functional>

#include "mnnpy/limits.h"
#include "mnnpy/op_registry.h"

namespace mnnpy {

namespace {
const AttrValue& lookup(const std::map<std::string, AttrValue>& items, const std::string& key) {
  auto it = items.find(key);
  if (it == items.end()) throw ValueError("missing attribute '" + key + "'");
  return it->second;
}

void hash_combine(size_t& seed, size_t v) { seed ^= v + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2); }
}  // namespace

int64_t Attrs::get_int(const std::string& key) const {
  const AttrValue& v = lookup(items_, key);
  if (auto p = std::get_if<int64_t>(&v)) return *p;
  throw TypeError("attribute '" + key + "' is not an integer");
}
int64_t Attrs::get_int(const std::string& key, int64_t fallback) const { return has(key) ? get_int(key) : fallback; }
double Attrs::get_float(const std::string& key) const {
  const AttrValue& v = lookup(items_, key);
  if (auto p = std::get_if<double>(&v)) return *p;
  if (auto p = std::get_if<int64_t>(&v)) return (double)*p;
  throw TypeError("attribute '" + key + "' is not a number");
}
const std::vector<int64_t>& Attrs::get_ints(const std::string& key) const {
  const AttrValue& v = lookup(items_, key);
  if (auto p = std::get_if<std::vector<int64_t>>(&v)) return *p;
  throw TypeError("attribute '" + key + "' is not a list of integers");
}
const std::string& Attrs::get_string(const std::string& key) const {
  const AttrValue& v = lookup(items_, key);
  if (auto p = std::get_if<std::string>(&v)) return *p;
  throw TypeError("attribute '" + key + "' is not a string");
}

size_t Attrs::hash() const {
  size_t seed = items_.size();
  for (auto& kv : items_) {
    hash_combine(seed, std::hash<std::string>()(kv.first));
    hash_combine(seed, kv.second.index());
    std::visit(
        [&](auto&& x) {
          using X = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<X, std::vector<int64_t>>) {
            for (int64_t e : x) hash_combine(seed, std::hash<int64_t>()(e));
          } else {
            hash_combine(seed, std::hash<X>()(x));
          }
        },
        kv.second);
  }
  return seed;
}

const TensorType& Var::type() const { return node->outputs[index]; }

Node::~Node() {
  // Release input chains iteratively: recursive destruction would need stack in proportion to
  // the graph's depth (x = x + 1 in a loop builds chains of any length).
  std::vector<std::shared_ptr<Node>> pending;
  auto detach = [&pending](std::vector<Var>& ins) {
    for (Var& v : ins) {
      if (v.node && v.node.use_count() == 1) pending.push_back(std::move(v.node));
    }
    ins.clear();
  };
  detach(inputs);
  while (!pending.empty()) {
    std::shared_ptr<Node> n = std::move(pending.back());
    pending.pop_back();
    detach(n->inputs);
  }
}

std::mutex& node_values_mutex() {
  static std::mutex* mutex = new std::mutex();  // never destroyed: nodes may outlive static teardown
  return *mutex;
}

bool Node::computed() const {
  std::lock_guard<std::mutex> lock(node_values_mutex());
  return has_values();
}

std::shared_ptr<Tensor> Node::value(int index) const {
  std::lock_guard<std::mutex> lock(node_values_mutex());
  return index >= 0 && (size_t)index < values.size() ? values[index] : nullptr;
}

std::shared_ptr<Tensor> Node::exchange_value(std::shared_ptr<Tensor> value) {
  std::vector<std::shared_ptr<Tensor>> fresh;
  if (value) fresh.push_back(std::move(value));
  std::lock_guard<std::mutex> lock(node_values_mutex());
  std::swap(values, fresh);
  return fresh.empty() ? nullptr : std::move(fresh[0]);
}

uint64_t Node::next_id() {
  static std::atomic<uint64_t> counter{1};
  return counter.fetch_add(1);
}

std::vector<Var> make_op_multi(const std::string& op_name, std::vector<Var> inputs, Attrs attrs) {
  return make_op_multi(get_op(op_name), std::move(inputs), std::move(attrs));
}

Var make_op(const std::string& op_name, std::vector<Var> inputs, Attrs attrs) {
  return make_op(get_op(op_name), std::move(inputs), std::move(attrs));
}

std::vector<Var> make_op_multi(const OpDef& op, std::vector<Var> inputs, Attrs attrs) {
  const std::string& op_name = op.name;
  const int n = (int)inputs.size();
  if (n < op.min_inputs || (op.max_inputs >= 0 && n > op.max_inputs)) {
    throw ValueError(op_name + " takes " + std::to_string(op.min_inputs) +
                     (op.max_inputs == op.min_inputs ? "" : (op.max_inputs < 0 ? " or more" : " to " + std::to_string(op.max_inputs))) +
                     " inputs, got " + std::to_string(n));
  }
  std::vector<TensorType> in_types;
  in_types.reserve(inputs.size());
  // (Node is built before inference so that inputs can be moved in afterwards.)
  auto node = std::make_shared<Node>();
  for (auto& v : inputs) {
    if (!v.valid()) throw ValueError(op_name + ": an input is an empty Var");
    in_types.push_back(v.type());
    node->uses_placeholder = node->uses_placeholder || v.node->uses_placeholder;
  }
  node->outputs = op.infer(in_types, attrs);
  // One place refuses impossible sizes, whatever op made them, before anything is allocated.
  for (const TensorType& t : node->outputs) {
    for (int64_t d : t.shape) {
      if (d < 0) throw ValueError(op_name + ": negative dimensions are not allowed: shape " + shape_str(t.shape));
    }
    check_tensor_size(t);
  }
  node->op = &op;
  node->attrs = std::move(attrs);
  node->id = Node::next_id();
  if (!inputs.empty()) node->data_format = inputs[0].node->data_format;
  node->inputs = std::move(inputs);
  std::vector<Var> outs;
  for (int i = 0; i < (int)node->outputs.size(); ++i) outs.push_back(Var{node, i});
  return outs;
}

Var make_op(const OpDef& op, std::vector<Var> inputs, Attrs attrs) {
  auto outs = make_op_multi(op, std::move(inputs), std::move(attrs));
  if (outs.size() != 1) throw ValueError(op.name + " has " + std::to_string(outs.size()) + " outputs, not one");
  return outs[0];
}

Var make_const(std::shared_ptr<Tensor> value, const std::string& data_format) {
  auto node = std::make_shared<Node>();
  node->op = &get_op("Const");
  node->kind = NodeKind::Const;
  node->outputs = {value->type};
  node->values = {std::move(value)};
  node->id = Node::next_id();
  node->data_format = data_format;
  return Var{node, 0};
}

Var make_placeholder(const TensorType& type, const std::string& data_format) {
  for (int64_t d : type.shape) {
    if (d < 0) throw ValueError("placeholder shape " + shape_str(type.shape) + " has a negative dimension");
  }
  check_tensor_size(type);  // a value written to it must fit in memory
  auto node = std::make_shared<Node>();
  node->op = &get_op("Input");
  node->kind = NodeKind::Placeholder;
  node->outputs = {type};
  node->id = Node::next_id();
  node->uses_placeholder = true;
  node->data_format = data_format;
  return Var{node, 0};
}

Var cast(const Var& v, DType to) {
  if (v.type().dtype == to) return v;
  static const OpDef& cast_op = get_op("Cast");
  return make_op(cast_op, {v}, Attrs().set("to", (int64_t)to));
}

namespace {
std::vector<TensorType> no_infer(const std::vector<TensorType>&, Attrs&) {
  throw ValueError("Const and Input nodes are made by const() and placeholder()");
}
}  // namespace

MNNPY_REGISTER_OP(OpDef{"Const", 0, 0, no_infer, {}, false});
MNNPY_REGISTER_OP(OpDef{"Input", 0, 0, no_infer, {}, false});

Var make_scalar(double value, DType t) {
  auto tensor = Tensor::allocate(TensorType{t, {}});
  convert_values(DType::Float64, t, &value, tensor->data, 1);
  return make_const(tensor);
}

}  // namespace mnnpy
