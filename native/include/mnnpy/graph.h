// The lazy expression graph: a Node is one op application (op + attributes + inputs) whose
// output types are inferred when it is built; a Var names one output of a node.
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "mnnpy/tensor.h"

namespace mnnpy {

struct OpDef;
struct Node;

using AttrValue = std::variant<int64_t, double, std::vector<int64_t>, std::string>;

// Op attributes, ordered by name so that equal attribute sets hash and compare equal.
class Attrs {
 public:
  Attrs() = default;
  Attrs& set(const std::string& key, AttrValue v) { items_[key] = std::move(v); return *this; }
  bool has(const std::string& key) const { return items_.count(key) != 0; }
  int64_t get_int(const std::string& key) const;
  int64_t get_int(const std::string& key, int64_t fallback) const;
  double get_float(const std::string& key) const;
  const std::vector<int64_t>& get_ints(const std::string& key) const;
  const std::string& get_string(const std::string& key) const;
  const std::map<std::string, AttrValue>& items() const { return items_; }
  size_t hash() const;
  bool operator==(const Attrs& o) const { return items_ == o.items_; }

 private:
  std::map<std::string, AttrValue> items_;
};

struct Var {
  std::shared_ptr<Node> node;
  int index = 0;
  const TensorType& type() const;
  bool valid() const { return node != nullptr; }
};

// How a node came to be, which decides whether its value may be cached.
enum class NodeKind : uint8_t { Op, Const, Placeholder };

struct Node {
  const OpDef* op = nullptr;
  NodeKind kind = NodeKind::Op;
  Attrs attrs;
  std::vector<Var> inputs;
  std::vector<TensorType> outputs;
  // Const data, a placeholder's written value, or an evaluated result kept for reuse.
  std::vector<std::shared_ptr<Tensor>> values;
  std::string name;
  std::string data_format = "NCHW";
  uint64_t id = 0;                 // unique for the process lifetime, never reused
  bool uses_placeholder = false;   // reads a placeholder somewhere upstream: never cache values

  Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  ~Node();

  // Reads `values` without the lock: for code that holds node_values_mutex() or owns the node.
  bool has_values() const {
    if (values.size() < outputs.size()) return false;
    for (auto& v : values) if (!v) return false;
    return true;
  }
  // The same under node_values_mutex(), for nodes other threads may be evaluating or writing.
  bool computed() const;
  std::shared_ptr<Tensor> value(int index) const;  // null when output `index` holds none
  // Replaces the values of a one-output node (a placeholder's new value) and returns the old one.
  std::shared_ptr<Tensor> exchange_value(std::shared_ptr<Tensor> value);
  static uint64_t next_id();
};

// Node::values changes after a node is built (evaluate keeps results on nodes; write() and
// share_value replace a placeholder's value) while other threads read it, so every access after
// construction holds this one lock. It guards nothing else and is held only to copy pointers.
std::mutex& node_values_mutex();

// Building blocks used by every front-end; all check their arguments and throw
// ValueError/TypeError with a message naming the problem.
Var make_op(const std::string& op_name, std::vector<Var> inputs, Attrs attrs = {});
std::vector<Var> make_op_multi(const std::string& op_name, std::vector<Var> inputs, Attrs attrs = {});
// The same for callers that hold the op definition already (hot paths: no name lookup).
Var make_op(const OpDef& op, std::vector<Var> inputs, Attrs attrs = {});
std::vector<Var> make_op_multi(const OpDef& op, std::vector<Var> inputs, Attrs attrs = {});
Var make_const(std::shared_ptr<Tensor> value, const std::string& data_format = "NCHW");
Var make_placeholder(const TensorType& type, const std::string& data_format = "NCHW");
Var cast(const Var& v, DType to);
// A 0-d constant of dtype t holding `value` converted as a C cast would.
Var make_scalar(double value, DType t);
Var reshape(const Var& v, const Shape& shape);

}  // namespace mnnpy
