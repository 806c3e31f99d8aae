#include "mnnpy/lowering.h"

#include <map>
#include <unordered_map>
#include <unordered_set>

#include "mnnpy/backend.h"

namespace mnnpy {

std::vector<int64_t> row_major_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t k = (int64_t)shape.size() - 2; k >= 0; --k) strides[k] = strides[k + 1] * shape[k + 1];
  return strides;
}

// ------------------------------------------------------------------ Raster attributes
// "regions" holds, per region: input, rank, src_offset, dst_offset, then rank sizes, rank source
// strides and rank destination strides.
Var raster(const std::vector<Var>& inputs, const Shape& shape, const std::vector<RasterRegion>& regions,
           std::optional<double> fill) {
  std::vector<int64_t> flat;
  for (const RasterRegion& r : regions) {
    flat.insert(flat.end(), {r.input, (int64_t)r.sizes.size(), r.src_offset, r.dst_offset});
    flat.insert(flat.end(), r.sizes.begin(), r.sizes.end());
    flat.insert(flat.end(), r.src_strides.begin(), r.src_strides.end());
    flat.insert(flat.end(), r.dst_strides.begin(), r.dst_strides.end());
  }
  Attrs attrs;
  attrs.set("shape", shape).set("regions", flat);
  if (fill) attrs.set("fill", *fill);
  return make_op("Raster", inputs, std::move(attrs));
}

std::vector<RasterRegion> raster_regions(const Attrs& attrs) {
  const std::vector<int64_t>& flat = attrs.get_ints("regions");
  std::vector<RasterRegion> regions;
  size_t at = 0;
  while (at < flat.size()) {
    if (flat.size() - at < 4) throw ValueError("Raster: a region's header is cut short");
    RasterRegion r;
    r.input = flat[at];
    const int64_t rank = flat[at + 1];
    r.src_offset = flat[at + 2];
    r.dst_offset = flat[at + 3];
    at += 4;
    if (rank < 0 || (uint64_t)rank > (flat.size() - at) / 3) throw ValueError("Raster: a region's rank is invalid");
    r.sizes.assign(flat.begin() + at, flat.begin() + at + rank);
    r.src_strides.assign(flat.begin() + at + rank, flat.begin() + at + 2 * rank);
    r.dst_strides.assign(flat.begin() + at + 2 * rank, flat.begin() + at + 3 * rank);
    at += 3 * rank;
    regions.push_back(std::move(r));
  }
  return regions;
}

// ------------------------------------------------------------------ decomposition registry
namespace {
std::map<std::string, DecomposeFn>& decompositions() {
  static std::map<std::string, DecomposeFn> table;
  return table;
}

// Whether `backend` runs node `n`: its kernel, or for an elementwise op, the one-instruction
// program the executor would fuse it into.
bool runs_on(const Backend& backend, const Node& n) {
  std::vector<TensorType> input_types;
  for (const Var& v : n.inputs) input_types.push_back(v.type());
  if (n.op->elementwise.arity != EwArity::None) {
    std::vector<EwInstr> program;
    EwInstr op;
    op.arity = n.op->elementwise.arity;
    op.code = n.op->elementwise.code;
    op.in_dtype = input_types[op.arity == EwArity::Ternary ? 1 : 0].dtype;
    op.out_dtype = n.outputs[0].dtype;
    int* operands[3] = {&op.a, &op.b, &op.c};
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      EwInstr load;
      load.a = (int)k;
      program.push_back(load);
      *operands[k] = (int)k;
    }
    program.push_back(op);
    return backend.make_elementwise_kernel(program, input_types, n.outputs[0]) != nullptr;
  }
  const std::vector<const Tensor*> constants(n.inputs.size(), nullptr);
  return backend.supports(*n.op, KernelContext{n.attrs, input_types, n.outputs, constants});
}

// Whether `backend` runs every node a decomposition built: those between its outputs and the
// values it was given (`inputs`) or constants.
bool runs_whole(const Backend& backend, const std::vector<Var>& outputs, const std::vector<Var>& inputs) {
  std::unordered_set<const Node*> seen;
  for (const Var& v : inputs) seen.insert(v.node.get());
  std::vector<const Node*> work;
  for (const Var& v : outputs) work.push_back(v.node.get());
  while (!work.empty()) {
    const Node* n = work.back();
    work.pop_back();
    if (!seen.insert(n).second || n->kind != NodeKind::Op || n->computed()) continue;
    if (!runs_on(backend, *n)) return false;
    for (const Var& v : n->inputs) work.push_back(v.node.get());
  }
  return true;
}
}  // namespace

DecompositionRegistrar::DecompositionRegistrar(const std::string& op_name, DecomposeFn fn) {
  decompositions()[op_name] = std::move(fn);
}

const DecomposeFn* find_decomposition(const std::string& op_name) {
  auto it = decompositions().find(op_name);
  return it == decompositions().end() ? nullptr : &it->second;
}

// ------------------------------------------------------------------ lowering
std::vector<Var> lower_for_backend(const std::vector<Var>& targets, const Backend& backend) {
  // Per op node visited: its outputs in the lowered graph (empty: the node itself).
  std::unordered_map<Node*, std::vector<Var>> lowered;
  auto mapped = [&](const Var& v) {
    auto it = lowered.find(v.node.get());
    return it == lowered.end() || it->second.empty() ? v : it->second[v.index];
  };
  auto is_leaf = [](const Node* n) { return n->kind != NodeKind::Op || n->computed(); };
  std::vector<std::pair<Node*, size_t>> stack;  // iterative post-order
  for (const Var& t : targets) {
    if (!t.valid()) throw ValueError("cannot evaluate an empty Var");
    if (is_leaf(t.node.get()) || lowered.count(t.node.get())) continue;
    stack.push_back({t.node.get(), 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (next < n->inputs.size()) {
        Node* in = n->inputs[next++].node.get();
        if (!is_leaf(in) && !lowered.count(in)) stack.push_back({in, 0});
        continue;
      }
      Node* node = n;
      stack.pop_back();
      std::vector<Var> inputs;
      bool changed = false;
      for (const Var& v : node->inputs) {
        inputs.push_back(mapped(v));
        changed = changed || inputs.back().node != v.node;
      }
      std::vector<Var> outputs;
      const DecomposeFn* decompose = find_decomposition(node->op->name);
      if (decompose && !runs_on(backend, *node)) {
        outputs = (*decompose)(inputs, node->attrs, node->outputs);
        // Where the CPU would run some of the primitives instead of the op, there is no gain.
        if (!runs_whole(backend, outputs, inputs)) outputs.clear();
      }
      if (outputs.empty() && changed) outputs = make_op_multi(*node->op, inputs, node->attrs);
      lowered[node] = std::move(outputs);
    }
  }
  std::vector<Var> result;
  for (const Var& t : targets) result.push_back(mapped(t));
  return result;
}

}  // namespace mnnpy
