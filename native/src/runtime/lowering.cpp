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

// ------------------------------------------------------------------ fusion registry
namespace {
std::map<std::string, std::vector<FuseFn>>& fusions() {
  static std::map<std::string, std::vector<FuseFn>> table;
  return table;
}

// Readers per op node's output in the graph behind `targets` (a target counts as one more).
using ReaderCounts = std::unordered_map<const Node*, std::vector<uint32_t>>;
ReaderCounts count_readers(const std::vector<Var>& targets) {
  ReaderCounts readers;
  std::vector<const Node*> work;
  auto read = [&](const Var& v) {
    const Node* n = v.node.get();
    if (n->kind != NodeKind::Op || n->computed()) return;
    auto [it, fresh] = readers.try_emplace(n, std::vector<uint32_t>(n->outputs.size(), 0));
    ++it->second[v.index];
    if (fresh) work.push_back(n);
  };
  for (const Var& t : targets) read(t);
  while (!work.empty()) {
    const Node* n = work.back();
    work.pop_back();
    for (const Var& v : n->inputs) read(v);
  }
  return readers;
}

// `node` fused with producers of its inputs, where a rule applies and `backend` runs the result;
// empty otherwise.
std::vector<Var> fused(const Backend& backend, const Node& node, const std::vector<Var>& inputs,
                       const ReaderCounts& readers) {
  auto rules = fusions().find(node.op->name);
  if (rules == fusions().end()) return {};
  FusionSite site{node, inputs, {}};
  for (const Var& v : node.inputs) {
    auto it = readers.find(v.node.get());
    site.sole_reader.push_back(it != readers.end() && it->second[v.index] == 1);
  }
  for (const FuseFn& rule : rules->second) {
    std::vector<Var> outputs = rule(site);
    if (!outputs.empty() && runs_on(backend, *outputs[0].node)) return outputs;
  }
  return {};
}
}  // namespace

FusionRegistrar::FusionRegistrar(const std::string& op_name, FuseFn fn) { fusions()[op_name].push_back(std::move(fn)); }

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
  const ReaderCounts readers = count_readers(targets);
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
      if (outputs.empty()) outputs = fused(backend, *node, inputs, readers);
      if (outputs.empty() && changed) outputs = make_op_multi(*node->op, inputs, node->attrs);
      lowered[node] = std::move(outputs);
    }
  }
  std::vector<Var> result;
  for (const Var& t : targets) result.push_back(mapped(t));
  return result;
}

}  // namespace mnnpy
