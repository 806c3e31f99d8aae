// mnnpy's graph file format (docs/file_format.md): saving the graph behind some Vars and
// loading it back by replaying every node through make_op / make_const / make_placeholder.
// Loaded constants point into a read-only mapping of the file instead of being copied.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "mnnpy/graph.h"
#include "mnnpy/mapped_file.h"

namespace mnnpy {

constexpr uint32_t kGraphFormatMajor = 1;
constexpr uint32_t kGraphFormatMinor = 0;

struct LoadedGraph {
  std::vector<Var> outputs;
  std::vector<std::string> names;  // one per output, as saved; empty when the Var had no name
  // Every named single-output node of the graph, in file order (how MNN's load_as_dict
  // finds inputs by name).
  std::vector<std::pair<std::string, Var>> named_nodes;
};

// Writes the graph behind `outputs` to `path` (through a temporary file renamed into place, so
// that mappings of an older file at `path` stay valid). Throws ValueError for graphs the format
// cannot hold and FileError when writing fails.
void save_graph(const std::vector<Var>& outputs, const std::string& path);

// Reads a file written by save_graph. Every field is checked before use; a damaged or hostile
// file raises ValueError (or FileError/IOError for problems reaching the file), never crashes.
LoadedGraph load_graph(const std::string& path);

}  // namespace mnnpy
