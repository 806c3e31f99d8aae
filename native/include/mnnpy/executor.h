// The executor: turns the pending subgraph behind some Vars into a cached plan
// (CSE, constant folding, elementwise fusion, memory planning) and runs it.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "mnnpy/graph.h"

namespace mnnpy {

struct ExecutorStats {
  uint64_t plans_built = 0, plan_cache_hits = 0, runs = 0;
  uint64_t last_nodes_before = 0, last_nodes_after = 0, last_kernels = 0, last_fused_groups = 0;
  uint64_t last_arena_bytes = 0, last_folded = 0;
  uint64_t plans_cached = 0, cached_plan_bytes = 0;
  uint64_t last_copies = 0, last_fallbacks = 0;  // border copies, and steps left on the CPU
  // Bytes of device memory the last plan's values and scratch take, and how many stretches of
  // steps it handed to device backends per run (each one submission on a GPU).
  uint64_t last_device_bytes = 0, last_device_submits = 0;
  // The device time of the last run without profiling (timestamps of its stretches), -1 where no
  // device measured one: next to the run's wall time, what went to submits, waits and the host.
  double last_device_seconds = -1;
  // How many of the last run's stretches replayed commands recorded at an earlier run of the
  // same plan (a GPU records a stretch once, at its first run on a thread, and submits it again).
  uint64_t last_device_replays = 0;
};

// Computes the values of `targets`; caches them on nodes that read no placeholder (when two
// threads compute one node at once, both return the value kept first).
// Safe to call from several threads; releases nothing itself (callers release the GIL).
std::vector<std::shared_ptr<Tensor>> evaluate(const std::vector<Var>& targets);

// The value `v` holds already (a constant's data, a placeholder's written value or a result
// kept by evaluate), or null: what evaluate would return for it, without planning anything.
std::shared_ptr<Tensor> held_value(const Var& v);

// A graph planned once for many runs (a loaded model's forward): the subgraph behind the
// targets is folded, collected and planned when this is made, so each run only takes the
// placeholders' values and runs the steps. The plan is shared read-only by every run, so runs
// from several threads at once are independent.
class PlannedGraph {
 public:
  // `inputs`: placeholders whose values each run(values) passes, in this order; they need no
  // value now. Every other placeholder needs one now and is read again at each run.
  explicit PlannedGraph(const std::vector<Var>& targets, const std::vector<Var>& inputs = {});
  // Runs with the current values of all placeholders.
  std::vector<std::shared_ptr<Tensor>> run() const;
  // Runs with `values` for the inputs (each of the input's dtype and shape), writing nothing
  // shared: the way to run one plan from several threads.
  std::vector<std::shared_ptr<Tensor>> run(const std::vector<std::shared_ptr<Tensor>>& values) const;
  const std::vector<Var>& targets() const;
  const std::vector<Var>& inputs() const;

 private:
  struct State;
  std::shared_ptr<const State> state_;
};
ExecutorStats executor_stats();
void clear_plan_cache();
// Plan options: individual passes can be turned off to compare their effect; "profile"
// times each step of later runs.
void set_executor_option(const std::string& name, bool on);

// One step of the last profiled run: the op (or fused ops, or "Copy(from->to)" for a copy
// between backends), the kernel's scheme, the output shape, wall time, counted floating-point
// operations, the backend it ran on, and whether it fell back to the CPU from the requested one.
struct StepProfile {
  std::string op, scheme, shape;
  double seconds = 0, flops = 0;
  std::string backend;
  bool fallback = false;
};
std::vector<StepProfile> last_profile();

}  // namespace mnnpy
