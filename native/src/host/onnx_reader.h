// Host library: ONNX models decoded straight from protobuf's wire format (onnx.proto's messages
// and field numbers), without protobuf or the onnx package. Parsing records where each tensor's
// elements lie in the input instead of copying them, so that the caller can allocate every array
// first and then copy each tensor once (decode_onnx_tensor), with no Python lock held.
//
// The input is untrusted: every length is checked against the bytes left, varints are at most
// 10 bytes, unknown fields are skipped by wire type, subgraphs nest at most kMaxOnnxGraphDepth
// deep, and a tensor's dims are checked against its data and the memory limit before anything
// is allocated for it. Messages and fields the converter does not read (functions, training
// info, sparse initializers, value_info, doc strings) are skipped unparsed.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mnnpy/dtype.h"
#include "mnnpy/tensor.h"

namespace mnnpy {
namespace host {

// Bytes that are not a well-formed protobuf of onnx.proto's messages. The message says where
// ("graph.node[3] 'conv1' (Conv).attribute[0] 'pads'") and what went wrong.
struct OnnxWireError : ValueError {
  using ValueError::ValueError;
};

// If branches nest this many graphs deep at most (protobuf's own parser stops at 100 messages,
// about 33 graphs).
constexpr int kMaxOnnxGraphDepth = 32;

// AttributeProto.AttributeType values the converter reads.
enum OnnxAttributeType : int32_t {
  kOnnxFloat = 1, kOnnxInt = 2, kOnnxString = 3, kOnnxTensor = 4, kOnnxGraph = 5,
  kOnnxFloats = 6, kOnnxInts = 7, kOnnxStrings = 8,
};

// Strings point into the parsed bytes, which must outlive these structures.
struct OnnxTensor {
  std::string_view name;
  std::vector<int64_t> dims;
  int32_t data_type = 0;
  bool external = false;  // data_location == EXTERNAL
  bool has_segment = false;
  bool has_raw_data = false;
  std::string_view raw_data;
  // The tensor's message: several pieces when a singular tensor field occurs more than once,
  // which protobuf merges in order. decode_onnx_tensor reads its typed data fields from them.
  std::vector<std::string_view> messages;
  // Elements in each typed data field, by field number (float_data 4, int32_data 5,
  // string_data 6, int64_data 7, double_data 10, uint64_data 11).
  uint64_t typed_counts[12] = {};
};

struct OnnxGraph;

struct OnnxAttribute {
  std::string_view name;
  int32_t type = 0;
  float f = 0;
  int64_t i = 0;
  std::string_view s;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string_view> strings;
  std::unique_ptr<OnnxTensor> t;  // parsed only when type is kOnnxTensor
  std::unique_ptr<OnnxGraph> g;   // parsed only when type is kOnnxGraph
};

struct OnnxNode {
  std::string_view op_type, domain, name;
  std::vector<std::string_view> inputs, outputs;
  std::vector<OnnxAttribute> attributes;
};

struct OnnxDim {
  enum Kind { kUnset, kValue, kParam } kind = kUnset;
  int64_t value = 0;
  std::string_view param;
};

// A graph input or output: its tensor type when TypeProto holds one (elem_type 0 otherwise).
struct OnnxValueInfo {
  std::string_view name;
  int32_t elem_type = 0;
  bool has_shape = false;
  std::vector<OnnxDim> dims;
};

struct OnnxGraph {
  std::string_view name;
  std::vector<OnnxNode> nodes;
  std::vector<OnnxTensor> initializers;
  std::vector<OnnxValueInfo> inputs, outputs;
};

struct OnnxModel {
  int64_t ir_version = 0;
  std::string_view producer_name, producer_version;
  std::vector<std::pair<std::string_view, int64_t>> opset_import;
  OnnxGraph graph;
};

// Throws OnnxWireError for bytes that are not an ONNX ModelProto.
OnnxModel parse_onnx_model(std::string_view bytes);

// The C-contiguous array a tensor becomes.
struct OnnxArrayPlan {
  const char* numpy_name = nullptr;  // "float32", "uint16", "bfloat16" ...
  bool has_dtype = false;            // whether mnnpy has the dtype (it lacks uint16/32/64)
  DType dtype = DType::Float32;
  size_t itemsize = 0;
  int field = 0;  // the typed data field that holds the elements when there is no raw_data
  uint64_t count = 0;
  size_t nbytes = 0;
};

// Checks a tensor before anything is allocated for it: a data type mnnpy reads, data in the
// model (not an external file), dims that are not negative and whose element count matches the
// data and fits in memory. Throws ValueError starting with `label` ("tensor 'w'").
OnnxArrayPlan plan_onnx_array(const OnnxTensor& t, const std::string& label);

// Writes the tensor's plan.nbytes bytes of elements to `dest` (from raw_data, little-endian, or
// the typed field its data type uses). Booleans are stored as 0 or 1 whatever their encoding.
void decode_onnx_tensor(const OnnxTensor& t, const OnnxArrayPlan& plan, void* dest);

}  // namespace host
}  // namespace mnnpy
