// The executor. evaluate() collects the pending subgraph behind the requested Vars, looks
// its plan up by structure and input types, and runs it. A plan is built once per key:
// common-subexpression elimination, elementwise fusion, kernel creation (resize), and
// memory planning of intermediates into one arena by liveness.
#include "mnnpy/executor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <unordered_map>

#include "mnnpy/aligned_memory.h"
#include "mnnpy/backend.h"
#include "mnnpy/limits.h"
#include "mnnpy/lowering.h"
#include "mnnpy/op_registry.h"
#include "mnnpy/runtime_info.h"
#include "mnnpy/sanitizer.h"
#include "mnnpy/simd_target.h"
#include "mnnpy/thread_pool.h"
#include "runtime/fused_elementwise.h"

namespace mnnpy {

namespace {

// ------------------------------------------------------------------ collected graph
struct Ref {
  int node = -1;  // index into Collected::nodes, or -1 for a leaf
  int index = 0;  // output index, or leaf index
  bool operator==(const Ref& o) const { return node == o.node && index == o.index; }
};

struct Collected {
  std::vector<Node*> nodes;                // op nodes in topological order
  std::vector<std::vector<Ref>> inputs;    // per node
  std::vector<std::pair<Node*, int>> leaves;
  // Per leaf, its value when collected (null for placeholders bound per run): runs read these,
  // never the nodes, which other threads may write meanwhile.
  std::vector<std::shared_ptr<Tensor>> leaf_values;
  std::vector<Ref> targets;
};

// Maps keys to indices: a linear scan while there are few (most graphs evaluated one
// expression at a time are tiny), a hash table beyond that.
template <class K, class Hash = std::hash<K>> class IndexOf {
 public:
  int find(const K& k) const {
    if (big_.empty()) {
      for (auto& [key, i] : small_) if (key == k) return i;
      return -1;
    }
    auto it = big_.find(k);
    return it == big_.end() ? -1 : it->second;
  }
  void insert(const K& k, int i) {
    if (big_.empty() && small_.size() < kSmall) {
      small_.emplace_back(k, i);
      return;
    }
    if (big_.empty()) for (auto& [key, j] : small_) big_.emplace(key, j);
    big_.emplace(k, i);
  }

 private:
  static constexpr size_t kSmall = 24;
  std::vector<std::pair<K, int>> small_;
  std::unordered_map<K, int, Hash> big_;
};

struct OutputHash {
  size_t operator()(const std::pair<Node*, int>& k) const { return std::hash<Node*>()(k.first) * 31 + k.second; }
};

std::string placeholder_label(const Node* placeholder) {
  return "placeholder" + (placeholder->name.empty() ? std::string() : " '" + placeholder->name + "'");
}

void require_written(const Node* placeholder) {
  if (!placeholder->has_values()) {
    throw ValueError(placeholder_label(placeholder) + " has no value: write() one before evaluating");
  }
}

// The subgraph behind `targets`, with the values of its leaves as they are now. Placeholders in
// `bound` get their values with each run (PlannedGraph::run(values)): they need none here.
Collected collect(const std::vector<Var>& targets, const std::vector<const Node*>& bound = {}) {
  Collected g;
  IndexOf<Node*> node_index;
  IndexOf<std::pair<Node*, int>, OutputHash> leaf_index;
  // One lock for the walk: which nodes are leaves, and the leaves' values, are read consistently.
  std::lock_guard<std::mutex> lock(node_values_mutex());
  auto leaf_ref = [&](Node* n, int idx) {
    auto key = std::make_pair(n, idx);
    const int found = leaf_index.find(key);
    if (found >= 0) return Ref{-1, found};
    const bool per_run = n->kind == NodeKind::Placeholder && std::find(bound.begin(), bound.end(), n) != bound.end();
    if (n->kind == NodeKind::Placeholder && !per_run) require_written(n);
    const int i = (int)g.leaves.size();
    g.leaves.push_back(key);
    g.leaf_values.push_back(per_run ? nullptr : n->values[idx]);
    leaf_index.insert(key, i);
    return Ref{-1, i};
  };
  auto is_leaf = [](Node* n) { return n->kind != NodeKind::Op || n->has_values(); };
  // Iterative post-order DFS.
  std::vector<std::pair<Node*, size_t>> stack;
  for (const Var& t : targets) {
    if (!t.valid()) throw ValueError("cannot evaluate an empty Var");
    if (is_leaf(t.node.get()) || node_index.find(t.node.get()) >= 0) continue;
    stack.push_back({t.node.get(), 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (next < n->inputs.size()) {
        Node* in = n->inputs[next++].node.get();
        if (!is_leaf(in) && node_index.find(in) < 0) stack.push_back({in, 0});
        continue;
      }
      std::vector<Ref> refs;
      for (const Var& v : n->inputs) {
        Node* in = v.node.get();
        refs.push_back(is_leaf(in) ? leaf_ref(in, v.index) : Ref{node_index.find(in), v.index});
      }
      node_index.insert(n, (int)g.nodes.size());
      g.nodes.push_back(n);
      g.inputs.push_back(std::move(refs));
      stack.pop_back();
    }
  }
  for (const Var& t : targets) {
    Node* n = t.node.get();
    g.targets.push_back(is_leaf(n) ? leaf_ref(n, t.index) : Ref{node_index.find(n), t.index});
  }
  return g;
}

// The plan cache key: the whole structure, spelled out so that equal keys mean equal graphs.
void put(std::string& k, const void* p, size_t n) { k.append((const char*)p, n); }
template <class T> void put(std::string& k, T v) { put(k, &v, sizeof(v)); }

void put_attrs(std::string& k, const Attrs& attrs) {
  put(k, attrs.items().size());
  for (auto& [name, value] : attrs.items()) {
    put(k, name.size());
    k += name;
    put(k, (uint8_t)value.index());
    std::visit(
        [&](auto&& x) {
          using X = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<X, std::vector<int64_t>>) {
            put(k, x.size());
            put(k, x.data(), x.size() * sizeof(int64_t));
          } else if constexpr (std::is_same_v<X, std::string>) {
            put(k, x.size());
            k += x;
          } else {
            put(k, x);
          }
        },
        value);
  }
}

// The value of input j (ref r) of a node running `op`, when the op packs that input and it is
// constant at plan time (a leaf that is not a placeholder); null otherwise.
const Tensor* packed_constant(const Collected& g, const OpDef* op, size_t j, const Ref& r) {
  if (j >= 32 || !(op->packed_inputs >> j & 1u) || r.node >= 0) return nullptr;
  if (g.leaves[r.index].first->kind == NodeKind::Placeholder) return nullptr;
  return g.leaf_values[r.index].get();
}

// Whether a device backend keeps input j (ref r) of a node running `op` in its memory between
// runs: a packed constant, or a constant the op lists in resident_inputs.
bool device_resident(const Collected& g, const OpDef* op, size_t j, const Ref& r) {
  if (packed_constant(g, op, j, r)) return true;
  return j < 32 && (op->resident_inputs >> j & 1u) && r.node < 0 && g.leaves[r.index].first->kind != NodeKind::Placeholder;
}

// The constants a plan for `backend` is keyed by (ids): those kernels pack, and on a device
// those it keeps resident.
const Tensor* keyed_constant(const Collected& g, const Backend& backend, const OpDef* op, size_t j, const Ref& r) {
  const bool device = !backend.capabilities().host_memory;
  return (device ? device_resident(g, op, j, r) : packed_constant(g, op, j, r) != nullptr) ? g.leaf_values[r.index].get()
                                                                                             : nullptr;
}

std::string plan_key(const Collected& g, const Backend& backend, Precision precision) {
  std::string k;
  k.reserve(64 + 32 * g.nodes.size());
  // Placement, and so every kernel, depends on the backend the plan is requested for, and a
  // kernel's arithmetic on the precision.
  put(k, (const void*)&backend);
  put(k, precision);
  // Kernels choose schemes and pack weights for the SIMD target active when they are made.
  put(k, simd_target_id());
  put(k, g.leaves.size());
  for (auto& [n, idx] : g.leaves) {
    const TensorType& t = n->outputs[idx];
    put(k, (uint8_t)t.dtype);
    put(k, t.shape.size());
    put(k, t.shape.data(), t.shape.size() * sizeof(int64_t));
  }
  put(k, g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const OpDef* op = g.nodes[i]->op;
    put(k, (const void*)op);
    put_attrs(k, g.nodes[i]->attrs);
    put(k, g.inputs[i].size());
    for (size_t j = 0; j < g.inputs[i].size(); ++j) {
      const Ref& r = g.inputs[i][j];
      put(k, r.node);
      put(k, r.index);
      // A kernel that packs this constant, or a device copy of it, is valid only for this very tensor.
      if (const Tensor* c = keyed_constant(g, backend, op, j, r)) put(k, c->id);
    }
  }
  for (const Ref& r : g.targets) {
    put(k, r.node);
    put(k, r.index);
  }
  return k;
}

// ------------------------------------------------------------------ plan
// Device: in the arena of a backend whose memory is not the host's (planned like the host arena,
// from the same liveness intervals). Resident: a packed constant's copy on a device, kept with the
// plan (the plan is keyed by that constant's id, so the copy stays valid).
enum class StorageKind : uint8_t { Leaf, Arena, Heap, Device, Resident };

struct PlanValue {
  TensorType type;
  StorageKind storage = StorageKind::Arena;
  const Backend* device = nullptr;  // the backend whose buffer holds it; null: host memory
  int root = -1;  // value whose bytes this one shares (views), or itself
  int leaf = -1;
  size_t arena_offset = 0;  // in the host arena, or in its device's arena
  int device_arena = -1;    // Device storage: index into Plan::device_arenas
  int resident = -1;        // Resident storage: index into Plan::residents
};

struct Step {
  std::unique_ptr<Kernel> kernel;
  std::string label;  // the op, the ops of a fused group, or "Copy(from->to)"
  const Backend* backend = nullptr;  // where it runs (for a copy: the device side)
  bool fallback = false;  // on the CPU because the requested backend does not support it
  std::vector<int> inputs, outputs;  // value ids
  size_t scratch_offset = 0;  // in the arena of the memory it runs in
  int device_arena = -1;  // index into Plan::device_arenas for steps on a device; -1: the host
  // A step on a device that starts a stretch of steps handed over together: one past its last.
  int stretch_end = 0;
  // A copy out of a device: it waits for the device's work and runs on the host, between
  // stretches. (A copy into a device belongs to the device's stretch, ordered with its steps.)
  bool reads_back = false;
  std::vector<int> arena_dead_after;  // ASan builds: arena values last used by this step
};

struct DeviceArena {
  const Backend* backend;
  size_t bytes = 0;
};

// A constant (weights) that device steps read, uploaded at the plan's first run instead of copied
// at every run.
struct ResidentConstant {
  const Backend* backend;
  int leaf;
  size_t bytes;
  std::shared_ptr<void> buffer;
  std::once_flag uploaded;
};

struct Plan {
  std::vector<PlanValue> values;
  std::vector<Step> steps;
  std::vector<int> targets;
  size_t arena_bytes = 0;
  std::vector<DeviceArena> device_arenas;  // one per device backend the plan uses
  std::vector<std::unique_ptr<ResidentConstant>> residents;
  uint64_t device_bytes = 0, device_stretches = 0;
  size_t resident_bytes = 0;  // what its kernels and resident constants keep between runs
  uint64_t nodes_before = 0, nodes_after = 0, fused_groups = 0;
  uint64_t copy_steps = 0, fallback_steps = 0;
};

// Moves a value across the border between host memory and a device backend's buffers (or
// between two devices, through the host).
class BorderCopyKernel : public Kernel {
 public:
  BorderCopyKernel(const Backend* from, const Backend* to) : from_(from), to_(to) {}  // null: host
  void execute(const KernelArgs& args, void*) const override {
    const Tensor& in = *args.inputs[0];
    Tensor& out = *args.outputs[0];
    const size_t bytes = out.nbytes();
    if (!from_) {
      to_->copy_from_host(out.data, in.data, bytes);
      return;
    }
    from_->synchronize();  // a read back to the host waits for the device's work
    if (!to_) {
      from_->copy_to_host(out.data, in.data, bytes);
      return;
    }
    std::unique_ptr<void, void (*)(void*)> staging(allocate_aligned(bytes), std::free);
    from_->copy_to_host(staging.get(), in.data, bytes);
    to_->copy_from_host(out.data, staging.get(), bytes);
  }
  const char* scheme() const override { return "copy"; }

 private:
  const Backend* from_;
  const Backend* to_;
};

std::atomic<bool> g_cse{true}, g_fusion{true};
std::atomic<bool> g_profile{false};
std::vector<StepProfile> g_last_profile;

struct Interval {
  int begin, end;
  size_t size;
  size_t* offset;
};

// Greedy by size: place the largest buffers first at the lowest offset free during their life.
size_t plan_arena(std::vector<Interval>& items) {
  std::sort(items.begin(), items.end(), [](const Interval& a, const Interval& b) { return a.size > b.size; });
  std::vector<const Interval*> placed;
  size_t total = 0;
  for (Interval& it : items) {
    std::vector<std::pair<size_t, size_t>> busy;
    for (const Interval* p : placed) {
      if (p->begin <= it.end && it.begin <= p->end) busy.push_back({*p->offset, *p->offset + p->size});
    }
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    for (auto& [b, e] : busy) {
      if (offset + it.size <= b) break;
      offset = std::max(offset, e);
    }
    *it.offset = offset;
    total = std::max(total, offset + it.size);
    placed.push_back(&it);
  }
  return total;
}

size_t align64(size_t n) { return (n + 63) & ~size_t(63); }

// A plan whose arena and results together need more memory than this machine has is refused
// before any of it is taken (each value alone passed check_tensor_size when its node was built).
void check_plan_fits_in_memory(const Plan& plan) {
  uint64_t needed = plan.arena_bytes;
  const PlanValue* largest = nullptr;
  for (const PlanValue& pv : plan.values) {
    if (pv.root >= 0 || pv.storage == StorageKind::Leaf) continue;
    if (pv.storage == StorageKind::Heap && __builtin_add_overflow(needed, (uint64_t)pv.type.nbytes(), &needed)) needed = UINT64_MAX;
    if (!largest || pv.type.nbytes() > largest->type.nbytes()) largest = &pv;
  }
  for (const DeviceArena& d : plan.device_arenas) {
    const size_t available = d.backend->capabilities().memory_bytes;
    size_t bytes = d.bytes;
    for (const auto& r : plan.residents) if (r->backend == d.backend) bytes += align64(r->bytes);
    if (available && bytes > available) {
      throw MemoryError("Unable to allocate " + byte_size_str(bytes) + " on backend '" + d.backend->name() +
                        "' for the constants and intermediate arrays of this computation (it has " +
                        byte_size_str(available) + ")");
    }
  }
  if (needed <= memory_limit_bytes()) return;
  throw MemoryError("Unable to allocate " + byte_size_str(needed) + " for the results and intermediate arrays of this computation" +
                    (largest ? " (the largest: an array with shape " + shape_str(largest->type.shape) + " and data type " +
                                   dtype_name(largest->type.dtype) + ")"
                             : std::string()));
}

// ASan builds leave unaddressable bytes after each buffer of the arena, so that a kernel running
// past its output's end lands on them rather than on the next buffer.
constexpr size_t kArenaRedZone = kAddressSanitizer ? 64 : 0;

std::unique_ptr<Plan> build_plan(const Collected& g, const Backend& requested, Precision precision) {
  auto plan = std::make_unique<Plan>();
  const Backend& cpu = cpu_backend();
  const bool other_backend = &requested != &cpu;
  const int L = (int)g.leaves.size();
  // Value ids: leaves first, then each node output.
  std::vector<int> first_value(g.nodes.size());
  std::vector<PlanValue>& values = plan->values;
  for (int i = 0; i < L; ++i) {
    PlanValue v;
    v.type = g.leaves[i].first->outputs[g.leaves[i].second];
    v.storage = StorageKind::Leaf;
    v.leaf = i;
    values.push_back(v);
  }
  auto value_of = [&](const Ref& r) { return r.node < 0 ? r.index : first_value[r.node] + r.index; };

  // CSE: a node equal in op, attributes and inputs to an earlier one is replaced by it.
  struct Local {
    const OpDef* op;
    const Attrs* attrs;
    std::vector<int> inputs;
    int first_output;
    int num_outputs;
    bool alive = true;
  };
  std::vector<Local> nodes;
  std::vector<int> replaced(values.size());  // value id -> canonical value id
  for (int i = 0; i < L; ++i) replaced[i] = i;
  std::unordered_multimap<size_t, int> seen;
  plan->nodes_before = g.nodes.size();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node* n = g.nodes[i];
    std::vector<int> ins;
    for (const Ref& r : g.inputs[i]) ins.push_back(replaced[value_of(r)]);
    first_value[i] = (int)values.size();
    size_t h = std::hash<const void*>()(n->op) ^ n->attrs.hash();
    for (int x : ins) h = h * 1000003u + (size_t)x;
    int same = -1;
    if (g_cse) {
      auto range = seen.equal_range(h);
      for (auto it = range.first; it != range.second; ++it) {
        const Local& o = nodes[it->second];
        if (o.op == n->op && *o.attrs == n->attrs && o.inputs == ins) same = it->second;
      }
    }
    for (size_t k = 0; k < n->outputs.size(); ++k) {
      PlanValue v;
      v.type = n->outputs[k];
      values.push_back(v);
      replaced.push_back(same >= 0 ? nodes[same].first_output + (int)k : (int)values.size() - 1);
    }
    if (same >= 0) continue;
    seen.insert({h, (int)nodes.size()});
    nodes.push_back(Local{n->op, &n->attrs, ins, first_value[i], (int)n->outputs.size()});
  }
  for (const Ref& r : g.targets) plan->targets.push_back(replaced[value_of(r)]);
  plan->nodes_after = nodes.size();

  // Producer and consumer counts per value; targets count as a consumer that needs the value.
  std::vector<int> producer(values.size(), -1), consumers(values.size(), 0);
  std::vector<char> is_target(values.size(), 0);
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (int k = 0; k < nodes[i].num_outputs; ++k) producer[nodes[i].first_output + k] = (int)i;
  }
  for (int t : plan->targets) is_target[t] = 1;
  // Dead code elimination: only nodes the targets need stay.
  std::vector<char> needed(nodes.size(), 0);
  for (int i = (int)nodes.size() - 1; i >= 0; --i) {
    bool any = false;
    for (int k = 0; k < nodes[i].num_outputs; ++k) {
      const int v = nodes[i].first_output + k;
      any = any || is_target[v] || consumers[v] > 0;
    }
    needed[i] = any;
    if (!any) continue;
    for (int x : nodes[i].inputs) ++consumers[x];
  }
  for (int t : plan->targets) ++consumers[t];

  // Fusion groups: walk from the last node back; an elementwise producer joins its
  // consumer's group when the consumer is its only user and the shapes are equal.
  std::vector<int> group(nodes.size(), -1);
  std::vector<int> group_roots;
  auto fusable = [&](int i) { return nodes[i].op->elementwise.arity != EwArity::None; };
  for (int i = (int)nodes.size() - 1; i >= 0; --i) {
    if (!needed[i] || group[i] >= 0 || !fusable(i)) continue;
    const int gid = (int)group_roots.size();
    group_roots.push_back(i);
    group[i] = gid;
    std::vector<int> work{i};
    const Shape& shape = values[nodes[i].first_output].type.shape;
    while (g_fusion && !work.empty()) {
      const int m = work.back();
      work.pop_back();
      for (int x : nodes[m].inputs) {
        const int p = producer[x];
        if (p < 0 || group[p] >= 0 || !fusable(p) || consumers[x] != 1 || is_target[x]) continue;
        if (values[x].type.shape != shape) continue;
        group[p] = gid;
        work.push_back(p);
      }
    }
  }

  // Steps in topological order: a group runs where its root is.
  std::vector<int> defined_at(values.size(), -1), last_use(values.size(), -1);
  auto emit = [&](Step&& step) {
    const int s = (int)plan->steps.size();
    for (int x : step.inputs) {
      // Reading a view keeps the bytes of the value it views alive.
      last_use[values[x].root >= 0 ? values[x].root : x] = s;
    }
    for (int y : step.outputs) defined_at[y] = s;
    plan->steps.push_back(std::move(step));
  };
  // Where a value's bytes live (a view's are its root's): a backend without host memory, or null.
  auto device_of_backend = [](const Backend* b) { return b->capabilities().host_memory ? nullptr : b; };
  auto device_of_value = [&](int v) { return values[values[v].root >= 0 ? values[v].root : v].device; };
  // A value moved to `to` (null: host) by one copy step, made once however many steps read it.
  std::map<std::pair<int, const Backend*>, int> copies;
  auto copy_of = [&](int v, const Backend* to) {
    auto [it, fresh] = copies.insert({{v, to}, -1});
    if (!fresh) return it->second;
    const Backend* from = device_of_value(v);
    PlanValue moved;
    moved.type = values[v].type;
    moved.device = to;
    values.push_back(moved);
    defined_at.push_back(-1);
    last_use.push_back(-1);
    const int copied = (int)values.size() - 1;
    Step copy;
    copy.kernel = std::make_unique<BorderCopyKernel>(from, to);
    copy.label = "Copy(" + (from ? from->name() : cpu.name()) + "->" + (to ? to->name() : cpu.name()) + ")";
    copy.backend = to ? to : from;
    copy.reads_back = from != nullptr;
    copy.inputs = {v};
    copy.outputs = {copied};
    emit(std::move(copy));
    ++plan->copy_steps;
    return it->second = copied;
  };
  // A constant (leaf v) a device keeps, read on device `to`: one resident copy, however many steps
  // read it.
  std::map<std::pair<int, const Backend*>, int> residents;
  auto resident_of = [&](int v, const Backend* to) {
    auto [it, fresh] = residents.insert({{v, to}, -1});
    if (!fresh) return it->second;
    PlanValue moved;
    moved.type = values[v].type;
    moved.device = to;
    moved.storage = StorageKind::Resident;
    moved.resident = (int)plan->residents.size();
    plan->residents.push_back(std::unique_ptr<ResidentConstant>(
        new ResidentConstant{to, values[v].leaf, values[v].type.nbytes(), nullptr, {}}));
    plan->resident_bytes += align64(values[v].type.nbytes());
    values.push_back(moved);
    defined_at.push_back(-1);
    last_use.push_back(-1);
    return it->second = (int)values.size() - 1;
  };
  for (int i = 0; i < (int)nodes.size(); ++i) {
    if (!needed[i]) continue;
    const Local& n = nodes[i];
    if (n.op->view_only) {
      const int out = n.first_output;
      values[out].root = values[n.inputs[0]].root >= 0 ? values[n.inputs[0]].root : n.inputs[0];
      continue;
    }
    if (group[i] >= 0 && group_roots[group[i]] != i) continue;  // emitted with its root
    Step step;
    std::vector<bool> resident;  // per input of step: a constant a device keeps (the plan is keyed by it)
    if (group[i] >= 0) {
      // Members of the group in topological order, then translate into a program.
      const int gid = group[i];
      std::vector<int> members;
      for (int j = 0; j <= i; ++j) if (group[j] == gid) members.push_back(j);
      std::vector<EwInstr> program;
      std::map<int, int> reg_of_value;
      std::vector<TensorType> input_types;
      auto operand = [&](int v) {
        auto it = reg_of_value.find(v);
        if (it != reg_of_value.end()) return it->second;
        EwInstr load;
        load.arity = EwArity::None;
        load.a = (int)step.inputs.size();
        step.inputs.push_back(v);
        input_types.push_back(values[v].type);
        program.push_back(load);
        return reg_of_value[v] = (int)program.size() - 1;
      };
      for (int j : members) {
        const Local& m = nodes[j];
        EwInstr ins;
        ins.arity = m.op->elementwise.arity;
        ins.code = m.op->elementwise.code;
        ins.in_dtype = values[m.inputs[ins.arity == EwArity::Ternary ? 1 : 0]].type.dtype;
        ins.out_dtype = values[m.first_output].type.dtype;
        int regs[3] = {-1, -1, -1};
        for (size_t k = 0; k < m.inputs.size(); ++k) regs[k] = operand(m.inputs[k]);
        ins.a = regs[0];
        ins.b = regs[1];
        ins.c = regs[2];
        program.push_back(ins);
        reg_of_value[m.first_output] = (int)program.size() - 1;
      }
      step.outputs = {n.first_output};
      step.label = "Fused(";
      for (size_t k = 0; k < members.size(); ++k) step.label += (k ? "," : "") + nodes[members[k]].op->name;
      step.label += ")";
      if (other_backend) {
        step.kernel = requested.make_elementwise_kernel(program, input_types, values[n.first_output].type);
        step.backend = &requested;
      }
      if (!step.kernel) {
        step.kernel = cpu.make_elementwise_kernel(program, input_types, values[n.first_output].type);
        step.backend = &cpu;
      }
      ++plan->fused_groups;
    } else {
      std::vector<TensorType> in_types, out_types;
      for (int x : n.inputs) in_types.push_back(values[x].type);
      for (int k = 0; k < n.num_outputs; ++k) out_types.push_back(values[n.first_output + k].type);
      std::vector<const Tensor*> constants(n.inputs.size(), nullptr);
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const PlanValue& in = values[n.inputs[k]];
        if (in.storage == StorageKind::Leaf) constants[k] = packed_constant(g, n.op, k, Ref{-1, in.leaf});
        resident.push_back(in.storage == StorageKind::Leaf && device_resident(g, n.op, k, Ref{-1, in.leaf}));
      }
      const KernelContext ctx{*n.attrs, in_types, out_types, constants, precision};
      step.backend = other_backend && requested.supports(*n.op, ctx) ? &requested : &cpu;
      if (step.backend == &cpu && !cpu.supports(*n.op, ctx)) throw ValueError("op '" + n.op->name + "' has no CPU kernel");
      step.kernel = step.backend->make_kernel(*n.op, ctx);
      step.label = n.op->name;
      step.inputs = n.inputs;
      for (int k = 0; k < n.num_outputs; ++k) step.outputs.push_back(n.first_output + k);
    }
    step.fallback = other_backend && step.backend == &cpu;
    plan->fallback_steps += step.fallback;
    const Backend* runs_on = device_of_backend(step.backend);
    for (size_t k = 0; k < step.inputs.size(); ++k) {
      int& x = step.inputs[k];
      if (device_of_value(x) == runs_on) continue;
      x = runs_on && k < resident.size() && resident[k] ? resident_of(x, runs_on) : copy_of(x, runs_on);
    }
    for (int y : step.outputs) values[y].device = runs_on;
    emit(std::move(step));
  }
  // Results are handed back in host memory.
  for (int& t : plan->targets) {
    if (device_of_value(t)) t = copy_of(t, nullptr);
  }
  for (PlanValue& pv : values) {
    if (pv.device && pv.root < 0 && pv.storage == StorageKind::Arena) pv.storage = StorageKind::Device;
  }

  // Storage: targets (and bytes a target view shares) live on the heap and are handed to
  // the caller; other intermediates share one arena.
  const int S = (int)plan->steps.size();
  for (int t : plan->targets) {
    const int r = values[t].root >= 0 ? values[t].root : t;
    if (values[r].storage == StorageKind::Arena) values[r].storage = StorageKind::Heap;
  }
  // One arena for the host and one per device backend, each planned from the liveness intervals
  // of the values and scratch in its memory.
  std::vector<std::vector<Interval>> device_intervals;
  auto device_arena_of = [&](const Backend* device) {
    for (size_t d = 0; d < plan->device_arenas.size(); ++d) if (plan->device_arenas[d].backend == device) return (int)d;
    plan->device_arenas.push_back(DeviceArena{device});
    device_intervals.emplace_back();
    return (int)plan->device_arenas.size() - 1;
  };
  std::vector<Interval> intervals;
  for (size_t v = 0; v < values.size(); ++v) {
    PlanValue& pv = values[v];
    const bool on_device = pv.storage == StorageKind::Device;
    if (pv.root >= 0 || (pv.storage != StorageKind::Arena && !on_device) || defined_at[v] < 0) continue;
    const int end = std::max(defined_at[v], last_use[v]);
    const size_t red_zone = on_device ? 0 : kArenaRedZone;
    Interval interval{defined_at[v], end, align64(pv.type.nbytes()) + red_zone, &pv.arena_offset};
    if (on_device) pv.device_arena = device_arena_of(pv.device);
    (on_device ? device_intervals[pv.device_arena] : intervals).push_back(interval);
    if (kAddressSanitizer && !on_device) plan->steps[end].arena_dead_after.push_back((int)v);
  }
  for (int s = 0; s < S; ++s) {
    Step& step = plan->steps[s];
    const size_t scratch = step.kernel->scratch_bytes();
    const Backend* device = step.reads_back ? nullptr : device_of_backend(step.backend);
    if (device) step.device_arena = device_arena_of(device);
    if (!scratch) continue;
    if (device) device_intervals[step.device_arena].push_back(Interval{s, s, align64(scratch), &step.scratch_offset});
    else intervals.push_back(Interval{s, s, align64(scratch) + kArenaRedZone, &step.scratch_offset});
  }
  plan->arena_bytes = plan_arena(intervals);
  for (size_t d = 0; d < plan->device_arenas.size(); ++d) {
    plan->device_arenas[d].bytes = plan_arena(device_intervals[d]);
    plan->device_bytes += plan->device_arenas[d].bytes;
  }
  // Stretches: consecutive steps on one device backend, handed over together.
  for (int s = 0; s < S;) {
    Step& first = plan->steps[s];
    int e = s + 1;
    if (first.device_arena >= 0) {
      while (e < S && plan->steps[e].device_arena == first.device_arena) ++e;
      // Copies of its values to the host that follow at once join it: the device records them with
      // the rest and waits once.
      const Backend* device = plan->device_arenas[first.device_arena].backend;
      while (e < S && plan->steps[e].reads_back && plan->steps[e].backend == device) ++e;
      first.stretch_end = e;
      ++plan->device_stretches;
    }
    s = e;
  }
  check_plan_fits_in_memory(*plan);
  for (const Step& step : plan->steps) plan->resident_bytes += step.kernel->resident_bytes();
  return plan;
}

// ------------------------------------------------------------------ cache and run
struct CacheEntry {
  std::shared_ptr<Plan> plan;
  std::list<std::string>::iterator lru;
  // The constants whose ids are in the key (packed into kernels, resident on a device): once one
  // has died, no graph can ask for this plan again, and its copies are dropped at the next insertion.
  std::vector<std::weak_ptr<Tensor>> keyed;
};

std::vector<std::weak_ptr<Tensor>> keyed_constants_of(const Collected& g, const Backend& backend) {
  std::vector<std::weak_ptr<Tensor>> keyed;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (size_t j = 0; j < g.inputs[i].size(); ++j)
      if (keyed_constant(g, backend, g.nodes[i]->op, j, g.inputs[i][j])) keyed.push_back(g.leaf_values[g.inputs[i][j].index]);
  return keyed;
}

bool any_expired(const std::vector<std::weak_ptr<Tensor>>& tensors) {
  for (const auto& t : tensors) if (t.expired()) return true;
  return false;
}

constexpr size_t kMaxCachedPlans = 512;
// Cached plans keep their kernels' packed weights and tables; past this many bytes in all, the
// least recently used go (a plan is rebuilt when asked for again).
uint64_t max_cached_plan_bytes() { return std::min<uint64_t>(uint64_t(1) << 30, memory_limit_bytes() / 8); }

std::mutex g_cache_mutex;
std::unordered_map<std::string, CacheEntry> g_cache;
std::list<std::string> g_lru;
uint64_t g_cached_plan_bytes = 0;  // resident bytes of the cached plans
ExecutorStats g_stats;

// The precision a plan for `backend` is built for: the requested one, except on the CPU, whose
// kernels compute float32 but for the bf16 products of "low" where it has a bf16 path (one plan
// for the other precisions).
Precision plan_precision(const Backend& backend) {
  const Precision requested = requested_precision();
  if (&backend != &cpu_backend()) return requested;
  return requested == Precision::Low && cpu_computes_bf16() ? Precision::Low : Precision::Normal;
}

std::shared_ptr<Plan> lookup_or_build(const Collected& g, const Backend& backend, Precision precision) {
  std::string key = plan_key(g, backend, precision);
  {
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    auto it = g_cache.find(key);
    if (it != g_cache.end()) {
      g_lru.splice(g_lru.begin(), g_lru, it->second.lru);
      ++g_stats.plan_cache_hits;
      return it->second.plan;
    }
  }
  std::shared_ptr<Plan> plan = build_plan(g, backend, precision);
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  ++g_stats.plans_built;
  g_stats.last_nodes_before = plan->nodes_before;
  g_stats.last_nodes_after = plan->nodes_after;
  g_stats.last_kernels = plan->steps.size();
  g_stats.last_fused_groups = plan->fused_groups;
  g_stats.last_arena_bytes = plan->arena_bytes;
  g_stats.last_copies = plan->copy_steps;
  g_stats.last_fallbacks = plan->fallback_steps;
  g_stats.last_device_bytes = plan->device_bytes;
  g_stats.last_device_submits = plan->device_stretches;
  if (g_cache.count(key)) return g_cache[key].plan;
  for (auto it = g_cache.begin(); it != g_cache.end();) {
    if (!any_expired(it->second.keyed)) {
      ++it;
      continue;
    }
    g_cached_plan_bytes -= it->second.plan->resident_bytes;
    g_lru.erase(it->second.lru);
    it = g_cache.erase(it);
  }
  g_lru.push_front(key);
  g_cache[key] = CacheEntry{plan, g_lru.begin(), keyed_constants_of(g, backend)};
  g_cached_plan_bytes += plan->resident_bytes;
  const uint64_t max_bytes = max_cached_plan_bytes();
  while (g_cache.size() > 1 && (g_cache.size() > kMaxCachedPlans || g_cached_plan_bytes > max_bytes)) {
    auto oldest = g_cache.find(g_lru.back());
    g_cached_plan_bytes -= oldest->second.plan->resident_bytes;
    g_cache.erase(oldest);
    g_lru.pop_back();
  }
  return plan;
}

// Intermediates live in a per-thread arena that grows to the largest plan it has run.
struct Arena {
  void* data = nullptr;
  size_t size = 0;
  ~Arena() { std::free(data); }
  void* reserve(size_t n) {
    if (n > size) {
      std::free(data);
      data = nullptr;
      size = 0;
      const size_t rounded = aligned_block_size(align64(n));
      data = allocate_aligned(rounded);
      size = rounded;
    }
    return data;
  }
};

// A device's counterpart: one buffer of that backend per thread, grown to the largest plan.
struct DeviceArenaBuffer {
  const Backend* backend;
  std::shared_ptr<void> buffer;
  size_t size = 0;
};

char* reserve_device_arena(const DeviceArena& needed) {
  thread_local std::vector<DeviceArenaBuffer> buffers;
  DeviceArenaBuffer* held = nullptr;
  for (DeviceArenaBuffer& b : buffers) if (b.backend == needed.backend) held = &b;
  if (!held) held = &buffers.emplace_back(DeviceArenaBuffer{needed.backend});
  if (held->size < needed.bytes) {
    held->buffer.reset();  // the old one goes first: device memory may not hold both
    held->size = 0;
    held->buffer = needed.backend->allocate(align64(needed.bytes));
    held->size = align64(needed.bytes);
  }
  return (char*)held->buffer.get();
}

// The device copies of constants, by (tensor id, backend): plans of one model that read the same
// weights (a language model's prompt and decoding plans) share one copy.
std::mutex g_device_copies_mutex;
std::map<std::pair<uint64_t, const Backend*>, std::weak_ptr<void>> g_device_copies;

// The device copy of a resident constant, uploaded by the first run that needs it (unless a
// live plan has it already).
char* resident_data(ResidentConstant& r, const Tensor& value) {
  std::call_once(r.uploaded, [&] {
    const std::pair<uint64_t, const Backend*> key{value.id, r.backend};
    {
      std::lock_guard<std::mutex> lock(g_device_copies_mutex);
      auto found = g_device_copies.find(key);
      if (found != g_device_copies.end()) r.buffer = found->second.lock();
    }
    if (r.buffer) return;
    r.buffer = r.backend->allocate(std::max<size_t>(align64(r.bytes), 64));
    r.backend->copy_from_host(r.buffer.get(), value.data, r.bytes);
    r.backend->synchronize();
    std::lock_guard<std::mutex> lock(g_device_copies_mutex);
    for (auto it = g_device_copies.begin(); it != g_device_copies.end();) {
      it = it->second.expired() ? g_device_copies.erase(it) : std::next(it);
    }
    g_device_copies[key] = r.buffer;
  });
  return (char*)r.buffer.get();
}

// Runs `plan` on `leaf_values` (one per leaf of the collected graph). Nothing shared is written:
// intermediates live in this thread's arenas, results in fresh tensors.
std::vector<std::shared_ptr<Tensor>> run_plan(const Plan& plan,
                                              const std::vector<std::shared_ptr<Tensor>>& leaf_values) {
  thread_local Arena arena;
  char* base = plan.arena_bytes ? (char*)arena.reserve(plan.arena_bytes) : nullptr;
  std::vector<char*> device_bases;
  for (const DeviceArena& d : plan.device_arenas) device_bases.push_back(d.bytes ? reserve_device_arena(d) : nullptr);
  // ASan builds: a buffer of the arena is addressable from the step that defines it to the last
  // step that reads it, and only its own bytes.
  if (base) poison_bytes(base, arena.size);
  auto arena_bytes_of = [&](int v) { return base + plan.values[v].arena_offset; };
  std::vector<std::shared_ptr<Tensor>> tensors(plan.values.size());
  for (size_t v = 0; v < plan.values.size(); ++v) {
    const PlanValue& pv = plan.values[v];
    if (pv.root >= 0) continue;
    if (pv.storage == StorageKind::Leaf) {
      tensors[v] = leaf_values[pv.leaf];
    } else if (pv.storage == StorageKind::Heap) {
      tensors[v] = Tensor::allocate(pv.type);
    } else if (pv.storage == StorageKind::Device) {
      auto t = std::make_shared<Tensor>();
      t->type = pv.type;
      t->data = device_bases[pv.device_arena] + pv.arena_offset;
      tensors[v] = std::move(t);
    } else if (pv.storage == StorageKind::Resident) {
      auto t = std::make_shared<Tensor>();
      t->type = pv.type;
      t->data = resident_data(*plan.residents[pv.resident], *leaf_values[plan.residents[pv.resident]->leaf]);
      tensors[v] = std::move(t);
    } else {
      auto t = std::make_shared<Tensor>();
      t->type = pv.type;
      t->data = base + pv.arena_offset;
      tensors[v] = std::move(t);
    }
  }
  for (size_t v = 0; v < plan.values.size(); ++v) {
    const PlanValue& pv = plan.values[v];
    if (pv.root < 0 || !tensors[pv.root]) continue;
    auto t = std::make_shared<Tensor>(*tensors[pv.root]);
    t->type = pv.type;
    tensors[v] = std::move(t);
  }
  KernelArgs args;
  args.pool = &ThreadPool::global();
  const ThreadPool::Caller caller(*args.pool);
  const bool profile = g_profile;
  std::vector<StepProfile> timings;
  auto call_of = [&](const Step& step) {
    StepCall call{step.kernel.get()};
    call.to_host = step.reads_back;
    for (int x : step.inputs) call.args.inputs.push_back(tensors[x].get());
    for (int y : step.outputs) call.args.outputs.push_back(tensors[y].get());
    call.args.pool = args.pool;
    if (step.kernel->scratch_bytes()) call.scratch = device_bases[step.device_arena] + step.scratch_offset;
    return call;
  };
  // ASan builds: a step's outputs in the host arena become addressable when it runs.
  auto unpoison_arena_outputs = [&](const Step& step) {
    for (int y : step.outputs) {
      const PlanValue& pv = plan.values[y];
      if (pv.root < 0 && pv.storage == StorageKind::Arena) unpoison_bytes(arena_bytes_of(y), pv.type.nbytes());
    }
  };
  std::vector<StepCall> stretch;
  uint64_t replayed_stretches = 0;
  std::vector<double> device_seconds_before;
  for (const DeviceArena& d : plan.device_arenas) device_seconds_before.push_back(d.backend->device_seconds_waited());
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& step = plan.steps[s];
    if (step.device_arena >= 0) {
      // A stretch of steps on a device: handed over at once (each alone, and waited for, when profiling).
      const Backend& device = *plan.device_arenas[step.device_arena].backend;
      if (!profile) {
        stretch.clear();
        for (size_t k = s; k < (size_t)step.stretch_end; ++k) {
          stretch.push_back(call_of(plan.steps[k]));
          if (kAddressSanitizer) unpoison_arena_outputs(plan.steps[k]);  // the copies to the host at its end
        }
        if (device.run_steps(stretch.data(), stretch.size())) ++replayed_stretches;
        if (kAddressSanitizer) {
          for (size_t k = s; k < (size_t)step.stretch_end; ++k) {
            for (int v : plan.steps[k].arena_dead_after) poison_bytes(arena_bytes_of(v), plan.values[v].type.nbytes());
          }
        }
        s = step.stretch_end - 1;
        continue;
      }
      const StepCall call = call_of(step);
      const auto start = std::chrono::steady_clock::now();
      device.run_steps(&call, 1);
      device.synchronize();
      const double measured = device.last_stretch_seconds();
      const double seconds = measured >= 0 ? measured
                                           : std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const std::string shape = call.args.outputs.empty() ? std::string() : shape_str(call.args.outputs[0]->type.shape);
      timings.push_back(StepProfile{step.label, step.kernel->scheme(), shape, seconds, step.kernel->flops(),
                                    step.backend->name(), step.fallback});
      continue;
    }
    args.inputs.clear();
    args.outputs.clear();
    for (int x : step.inputs) args.inputs.push_back(tensors[x].get());
    for (int y : step.outputs) args.outputs.push_back(tensors[y].get());
    void* scratch = base ? base + step.scratch_offset : nullptr;
    if (kAddressSanitizer) {
      unpoison_arena_outputs(step);
      if (scratch) unpoison_bytes(scratch, step.kernel->scratch_bytes());
    }
    if (!profile) {
      step.kernel->execute(args, scratch);
    } else {
      const auto start = std::chrono::steady_clock::now();  // read only when profiling: steps can be tiny
      step.kernel->execute(args, scratch);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const std::string shape = args.outputs.empty() ? std::string() : shape_str(args.outputs[0]->type.shape);
      timings.push_back(StepProfile{step.label, step.kernel->scheme(), shape, seconds, step.kernel->flops(),
                                    step.backend->name(), step.fallback});
    }
    if (kAddressSanitizer) {
      if (scratch) poison_bytes(scratch, step.kernel->scratch_bytes());
      for (int v : step.arena_dead_after) poison_bytes(arena_bytes_of(v), plan.values[v].type.nbytes());
    }
  }
  if (profile) {
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    g_last_profile = std::move(timings);
  } else {
    double device_seconds = plan.device_arenas.empty() ? -1 : 0;
    for (size_t d = 0; d < plan.device_arenas.size(); ++d) {
      const Backend& device = *plan.device_arenas[d].backend;
      device.synchronize();  // a no-op where the copies of the results waited for everything
      const double waited = device.device_seconds_waited();
      device_seconds = waited < 0 || device_seconds < 0 ? -1 : device_seconds + waited - device_seconds_before[d];
    }
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    g_stats.last_device_seconds = device_seconds;
    g_stats.last_device_replays = replayed_stretches;
  }
  std::vector<std::shared_ptr<Tensor>> out;
  for (int t : plan.targets) out.push_back(tensors[t]);
  return out;
}

// Constant folding: in a graph that reads placeholders, parts that read none are computed
// once (and kept on their nodes), so every later run starts from their values.
Collected collect_folded(const std::vector<Var>& targets, const std::vector<const Node*>& bound = {}) {
  Collected g = collect(targets, bound);
  bool uses_placeholder = false;
  for (Node* n : g.nodes) uses_placeholder = uses_placeholder || n->uses_placeholder;
  if (!uses_placeholder) return g;
  std::vector<Var> frontier;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!g.nodes[i]->uses_placeholder) continue;
    for (const Var& in : g.nodes[i]->inputs) {
      if (!in.node->uses_placeholder && in.node->kind == NodeKind::Op && !in.node->computed()) frontier.push_back(in);
    }
  }
  if (frontier.empty()) return g;
  evaluate(frontier);
  {
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    g_stats.last_folded = frontier.size();
  }
  return collect(targets, bound);
}

void count_run() {
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  ++g_stats.runs;
}

}  // namespace

std::vector<std::shared_ptr<Tensor>> evaluate(const std::vector<Var>& targets) {
  const Backend& backend = requested_backend();
  // The lowered graph's new nodes live as long as `lowered` (through the run); the CPU runs the
  // targets as they are, without a copy of the list.
  std::vector<Var> lowered;
  if (&backend != &cpu_backend()) lowered = lower_for_backend(targets, backend);
  Collected g = collect_folded(lowered.empty() ? targets : lowered);
  std::shared_ptr<Plan> plan = lookup_or_build(g, backend, plan_precision(backend));
  std::vector<std::shared_ptr<Tensor>> out = run_plan(*plan, g.leaf_values);
  {
    // Another thread may have computed the same node meanwhile: the first value stays, so every
    // reader of a node sees one value.
    std::lock_guard<std::mutex> lock(node_values_mutex());
    for (size_t i = 0; i < targets.size(); ++i) {
      Node* n = targets[i].node.get();
      if (n->kind == NodeKind::Op && !n->uses_placeholder) {
        if (n->values.size() < n->outputs.size()) n->values.resize(n->outputs.size());
        std::shared_ptr<Tensor>& kept = n->values[targets[i].index];
        if (kept) out[i] = kept;
        else kept = out[i];
      }
    }
  }
  count_run();
  return out;
}

std::shared_ptr<Tensor> held_value(const Var& v) { return v.valid() ? v.node->value(v.index) : nullptr; }

struct PlannedGraph::State {
  std::vector<Var> targets;
  std::vector<Var> lowered_targets;  // the targets as lowered for the backend: keeps every collected node alive
  std::vector<Var> inputs;
  Collected graph;
  std::shared_ptr<Plan> plan;
  int64_t simd_target = 0;  // the target the plan's kernels were made for
  const Backend* backend = nullptr;  // the backend the plan was requested for
  Precision precision = Precision::Normal;  // and its precision
  std::vector<int> input_leaf;         // per input: its leaf, or -1 where the plan does not read it
  std::vector<int> placeholder_leaves;  // leaves of placeholders that are not inputs: read at each run

  // Sets the values of `leaves` to their placeholders' current values.
  void read_placeholders(const std::vector<int>& which, std::vector<std::shared_ptr<Tensor>>& leaf_values) const {
    std::lock_guard<std::mutex> lock(node_values_mutex());
    for (int leaf : which) {
      if (leaf < 0) continue;
      const auto& [node, index] = graph.leaves[leaf];
      require_written(node);
      leaf_values[leaf] = node->values[index];
    }
  }

  // The plan for the SIMD target, backend and precision requested now: after a change the kernels
  // are made again.
  std::shared_ptr<Plan> current_plan() const {
    const Backend& requested = requested_backend();
    const Precision wanted = plan_precision(requested);
    return simd_target == simd_target_id() && backend == &requested && precision == wanted
               ? plan
               : lookup_or_build(graph, requested, wanted);
  }
};

PlannedGraph::PlannedGraph(const std::vector<Var>& targets, const std::vector<Var>& inputs) {
  auto state = std::make_shared<State>();
  state->targets = targets;
  state->inputs = inputs;
  std::vector<const Node*> bound;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].valid() || inputs[i].node->kind != NodeKind::Placeholder) {
      throw ValueError("PlannedGraph: input " + std::to_string(i) + " is not a placeholder");
    }
    if (std::find(bound.begin(), bound.end(), inputs[i].node.get()) != bound.end()) {
      throw ValueError("PlannedGraph: input " + std::to_string(i) + " (" + placeholder_label(inputs[i].node.get()) +
                       ") is listed twice");
    }
    bound.push_back(inputs[i].node.get());
  }
  state->backend = &requested_backend();
  // Lowered once for the backend requested now; after a change of backend, nodes the new one has
  // no kernel for run on the CPU.
  state->lowered_targets = state->backend == &cpu_backend() ? targets : lower_for_backend(targets, *state->backend);
  state->graph = collect_folded(state->lowered_targets, bound);
  state->precision = plan_precision(*state->backend);
  state->plan = lookup_or_build(state->graph, *state->backend, state->precision);
  state->simd_target = simd_target_id();
  state->input_leaf.assign(inputs.size(), -1);
  const std::vector<std::pair<Node*, int>>& leaves = state->graph.leaves;
  for (int leaf = 0; leaf < (int)leaves.size(); ++leaf) {
    if (leaves[leaf].first->kind != NodeKind::Placeholder) continue;
    const auto it = std::find(bound.begin(), bound.end(), leaves[leaf].first);
    if (it == bound.end()) state->placeholder_leaves.push_back(leaf);
    else state->input_leaf[it - bound.begin()] = leaf;
    // Placeholders are read at each run; holding their values now would keep old parameters
    // alive and stop write() from reusing their bytes.
    state->graph.leaf_values[leaf] = nullptr;
  }
  state_ = std::move(state);
}

const std::vector<Var>& PlannedGraph::targets() const { return state_->targets; }
const std::vector<Var>& PlannedGraph::inputs() const { return state_->inputs; }

std::vector<std::shared_ptr<Tensor>> PlannedGraph::run() const {
  std::vector<std::shared_ptr<Tensor>> leaf_values = state_->graph.leaf_values;
  state_->read_placeholders(state_->placeholder_leaves, leaf_values);
  state_->read_placeholders(state_->input_leaf, leaf_values);
  std::vector<std::shared_ptr<Tensor>> out = run_plan(*state_->current_plan(), leaf_values);
  count_run();
  return out;
}

std::vector<std::shared_ptr<Tensor>> PlannedGraph::run(const std::vector<std::shared_ptr<Tensor>>& values) const {
  const State& s = *state_;
  if (values.size() != s.inputs.size()) {
    throw ValueError("PlannedGraph.run: the plan takes " + std::to_string(s.inputs.size()) + " input values, got " +
                     std::to_string(values.size()));
  }
  std::vector<std::shared_ptr<Tensor>> leaf_values = s.graph.leaf_values;
  for (size_t i = 0; i < values.size(); ++i) {
    const TensorType& want = s.inputs[i].type();
    if (!values[i] || values[i]->type.dtype != want.dtype || values[i]->type.shape != want.shape) {
      const std::string got = values[i] ? std::string(dtype_name(values[i]->type.dtype)) + " of shape " +
                                              shape_str(values[i]->type.shape)
                                        : std::string("no value");
      throw ValueError("PlannedGraph.run: input " + std::to_string(i) + " (" +
                       placeholder_label(s.inputs[i].node.get()) + ") must be " + dtype_name(want.dtype) +
                       " of shape " + shape_str(want.shape) + ", got " + got);
    }
    if (s.input_leaf[i] >= 0) leaf_values[s.input_leaf[i]] = values[i];
  }
  if (!s.placeholder_leaves.empty()) s.read_placeholders(s.placeholder_leaves, leaf_values);
  std::vector<std::shared_ptr<Tensor>> out = run_plan(*s.current_plan(), leaf_values);
  count_run();
  return out;
}

ExecutorStats executor_stats() {
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  ExecutorStats stats = g_stats;
  stats.plans_cached = g_cache.size();
  stats.cached_plan_bytes = g_cached_plan_bytes;
  return stats;
}

void clear_plan_cache() {
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  g_cache.clear();
  g_lru.clear();
  g_cached_plan_bytes = 0;
}

std::vector<StepProfile> last_profile() {
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  return g_last_profile;
}

void set_executor_option(const std::string& name, bool on) {
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  if (name == "profile") {
    g_profile = on;  // plans stay valid
    return;
  }
  if (name == "cse") g_cse = on;
  else if (name == "fusion") g_fusion = on;
  else if (name == "streaming_stores") g_streaming_stores = on;
  else if (name == "mul_add") g_fuse_mul_add = on;
  else throw ValueError("unknown executor option '" + name + "' (known: cse, fusion, streaming_stores, mul_add, profile)");
  g_cache.clear();
  g_lru.clear();
  g_cached_plan_bytes = 0;
}

}  // namespace mnnpy
