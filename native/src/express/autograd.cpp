// Reverse-mode differentiation: walk the graph behind the outputs once in topological order,
// then visit it backwards, asking each op's registered rule for its inputs' gradients and
// summing the gradients that meet at a Var. The result is more graph, so a training step is
// planned, fused and cached like inference.
#include "mnnpy/autograd.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_set>

#include "mnnpy/op_registry.h"
#include "mnnpy/ops.h"
#include "mnnpy/shape_ops.h"

namespace mnnpy {

namespace {

using VarKey = std::pair<const Node*, int>;

bool differentiable(DType t) { return is_float(t); }

// Nodes behind the outputs, inputs before users.
std::vector<std::shared_ptr<Node>> topological_order(const std::vector<Var>& ys) {
  std::vector<std::shared_ptr<Node>> order;
  std::unordered_set<const Node*> seen;
  std::vector<std::pair<std::shared_ptr<Node>, size_t>> stack;
  for (const Var& y : ys) {
    if (!seen.insert(y.node.get()).second) continue;
    stack.push_back({y.node, 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (next < n->inputs.size()) {
        const std::shared_ptr<Node>& in = n->inputs[next++].node;
        if (seen.insert(in.get()).second) stack.push_back({in, 0});
        continue;
      }
      order.push_back(n);
      stack.pop_back();
    }
  }
  return order;
}

}  // namespace

Var zeros_of(const TensorType& type) { return broadcast_to(make_scalar(0.0, type.dtype), type.shape); }
Var ones_of(const TensorType& type) { return broadcast_to(make_scalar(1.0, type.dtype), type.shape); }

Var sum_to_shape(const Var& g, const Shape& shape) {
  const Shape& from = g.type().shape;
  if (from == shape) return g;
  const size_t lead = from.size() - shape.size();
  std::vector<int64_t> axes;
  for (size_t i = 0; i < from.size(); ++i) {
    if (i < lead || (shape[i - lead] == 1 && from[i] != 1)) axes.push_back((int64_t)i);
  }
  Var summed = axes.empty() ? g : reduce("sum", g, axes, false);
  return summed.type().shape == shape ? summed : reshape(summed, shape);
}

Var broadcast_to_shape(const Var& g, const Shape& shape) {
  return g.type().shape == shape ? g : broadcast_to(g, shape);
}

std::vector<Var> gradients(const std::vector<Var>& ys, const std::vector<Var>& seeds, const std::vector<Var>& xs) {
  if (!seeds.empty() && seeds.size() != ys.size()) {
    throw ValueError("grad: got " + std::to_string(seeds.size()) + " output gradients for " +
                     std::to_string(ys.size()) + " outputs");
  }
  for (const Var& x : xs) {
    if (!differentiable(x.type().dtype)) {
      throw TypeError(std::string("grad: can only differentiate with respect to floating-point Vars, got ") +
                      dtype_name(x.type().dtype));
    }
  }
  const std::vector<std::shared_ptr<Node>> order = topological_order(ys);

  // Which Vars lie on a path from an x: only those need gradients.
  std::unordered_set<const Node*> reaches;
  std::set<VarKey> target;
  for (const Var& x : xs) target.insert({x.node.get(), x.index});
  for (const std::shared_ptr<Node>& node : order) {
    const Node* n = node.get();
    bool on_path = false;
    for (size_t i = 0; i < n->outputs.size(); ++i) on_path = on_path || target.count({n, (int)i}) != 0;
    for (const Var& in : n->inputs) on_path = on_path || reaches.count(in.node.get());
    if (on_path) reaches.insert(n);
  }

  std::map<VarKey, Var> grads;
  auto accumulate = [&](const Var& v, const Var& g) {
    if (!g.valid()) return;
    if (g.type().shape != v.type().shape) {
      throw std::runtime_error("grad: the rule of op '" + std::string(v.node->op ? v.node->op->name : "?") +
                         "' gave a gradient of shape " + shape_str(g.type().shape) + " for an input of shape " +
                         shape_str(v.type().shape));
    }
    const Var gv = g.type().dtype == v.type().dtype ? g : cast(g, v.type().dtype);
    auto [it, fresh] = grads.emplace(VarKey{v.node.get(), v.index}, gv);
    if (!fresh) it->second = binary("Add", it->second, gv);
  };
  for (size_t i = 0; i < ys.size(); ++i) {
    const Var& y = ys[i];
    if (!differentiable(y.type().dtype)) {
      throw TypeError(std::string("grad: outputs must be floating point, got ") + dtype_name(y.type().dtype));
    }
    const Var seed = seeds.empty() || !seeds[i].valid() ? ones_of(y.type()) : broadcast_to_shape(seeds[i], y.type().shape);
    accumulate(y, seed);
  }

  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const std::shared_ptr<Node>& node = *it;
    const Node* n = node.get();
    if (n->kind != NodeKind::Op || !reaches.count(n)) continue;
    bool any_input_on_path = false;
    for (const Var& in : n->inputs) {
      any_input_on_path = any_input_on_path || (reaches.count(in.node.get()) && differentiable(in.type().dtype));
    }
    if (!any_input_on_path) continue;
    GradContext ctx{*n, {}, {}};
    bool any_grad = false;
    for (size_t o = 0; o < n->outputs.size(); ++o) {
      auto g = grads.find({n, (int)o});
      ctx.output_grads.push_back(g == grads.end() ? Var{} : g->second);
      ctx.outputs.push_back(Var{node, (int)o});
      any_grad = any_grad || g != grads.end();
    }
    if (!any_grad) continue;
    const GradFn* rule = find_grad(n->op->name);
    if (!rule) throw ValueError("grad: op '" + n->op->name + "' has no gradient rule");
    std::vector<Var> input_grads = (*rule)(ctx);
    if (input_grads.size() != n->inputs.size()) {
      throw std::runtime_error("grad: the rule of op '" + n->op->name + "' gave " + std::to_string(input_grads.size()) +
                         " gradients for " + std::to_string(n->inputs.size()) + " inputs");
    }
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      const Var& in = n->inputs[i];
      if (!reaches.count(in.node.get()) || !differentiable(in.type().dtype)) continue;
      accumulate(in, input_grads[i]);
    }
  }

  std::vector<Var> result;
  for (const Var& x : xs) {
    auto g = grads.find({x.node.get(), x.index});
    result.push_back(g == grads.end() ? zeros_of(x.type()) : g->second);
  }
  return result;
}

}  // namespace mnnpy
