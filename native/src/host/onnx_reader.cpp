#include "host/onnx_reader.h"

#include <algorithm>
#include <deque>
#include <cstring>

#include "mnnpy/aligned_memory.h"
#include "mnnpy/limits.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "ONNX raw_data and protobuf's fixed-width fields are little-endian: the reader copies them as they are");

namespace mnnpy {
namespace host {

namespace {

// Tensors at least this large have their fresh pages mapped in one call before the copy.
constexpr size_t kPrefaultBytes = size_t(1) << 20;

// Protobuf wire types.
constexpr uint32_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;

// Where the parser is, for messages: "graph.node[3] 'conv1' (Conv).attribute[0] 'pads'".
struct Frame {
  const char* field;
  int64_t index;  // -1 for a singular field
  std::string_view name, detail;
};

class Parser {
 public:
  [[noreturn]] void fail(const std::string& problem) const {
    std::string where;
    for (const Frame& f : frames) {
      if (!where.empty()) where += '.';
      where += f.field;
      if (f.index >= 0) where += "[" + std::to_string(f.index) + "]";
      if (!f.name.empty()) where += " '" + std::string(f.name) + "'";
      if (!f.detail.empty()) where += " (" + std::string(f.detail) + ")";
    }
    throw OnnxWireError(where.empty() ? problem : where + ": " + problem);
  }

  std::deque<Frame> frames;  // a deque: parsers keep references to their frame while deeper ones come and go
};

// A frame for the time a nested message is parsed.
class Scope {
 public:
  Scope(Parser& parser, const char* field, int64_t index = -1) : parser_(parser) {
    parser_.frames.push_back(Frame{field, index, {}, {}});
  }
  ~Scope() { parser_.frames.pop_back(); }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  Frame& frame() { return parser_.frames.back(); }

 private:
  Parser& parser_;
};

// The fields of one message, in order.
class Reader {
 public:
  Reader(std::string_view bytes, const Parser& parser)
      : p_(reinterpret_cast<const uint8_t*>(bytes.data())), end_(p_ + bytes.size()), parser_(parser) {}

  bool more() const { return p_ < end_; }

  // The next field's number and wire type.
  void next(uint32_t* field, uint32_t* wire) {
    const uint64_t tag = varint();
    if (tag > UINT32_MAX || (tag >> 3) == 0) parser_.fail("invalid field tag " + std::to_string(tag));
    *field = (uint32_t)(tag >> 3);
    *wire = (uint32_t)(tag & 7);
  }

  uint64_t varint() {
    uint64_t v = 0;
    for (int i = 0; i < 10; ++i) {
      if (p_ == end_) parser_.fail("a varint runs past the end of its message");
      const uint8_t b = *p_++;
      v |= uint64_t(b & 0x7f) << (7 * i);
      if (!(b & 0x80)) return v;
    }
    parser_.fail("a varint is longer than 10 bytes");
  }

  std::string_view bytes() {
    const uint64_t n = varint();
    if (n > (uint64_t)(end_ - p_)) {
      parser_.fail("a field of " + std::to_string(n) + " bytes runs past the end of its message (" +
                   std::to_string(end_ - p_) + " bytes left)");
    }
    std::string_view s(reinterpret_cast<const char*>(p_), (size_t)n);
    p_ += n;
    return s;
  }

  uint32_t fixed32() {
    uint32_t v;
    std::memcpy(&v, take(4), 4);
    return v;
  }

  void skip(uint32_t wire) {
    switch (wire) {
      case kVarint: varint(); return;
      case kFixed64: take(8); return;
      case kLengthDelimited: bytes(); return;
      case kFixed32: take(4); return;
      case 3:
      case 4: parser_.fail("a group (wire type " + std::to_string(wire) + "), which ONNX never uses");
      default: parser_.fail("invalid wire type " + std::to_string(wire));
    }
  }

  // n bytes of a fixed-width value.
  const uint8_t* take(size_t n) {
    if ((size_t)(end_ - p_) < n) parser_.fail("a " + std::to_string(n) + "-byte value runs past the end of its message");
    const uint8_t* at = p_;
    p_ += n;
    return at;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
  const Parser& parser_;
};

// The number of varints packed in `s`, each checked to end within it and within 10 bytes.
uint64_t count_varints(std::string_view s, const Parser& parser) {
  uint64_t count = 0;
  int run = 0;
  for (const char c : s) {
    if ((uint8_t)c & 0x80) {
      if (++run == 10) parser.fail("a packed varint is longer than 10 bytes");
    } else {
      ++count;
      run = 0;
    }
  }
  if (run) parser.fail("the last packed varint runs past the end of its field");
  return count;
}

// Calls on_field(reader, field number, wire type) for each field of a message, in order; it
// reads the field's value or skips it.
template <class OnField>
void for_each_field(std::string_view bytes, const Parser& parser, OnField&& on_field) {
  Reader r(bytes, parser);
  while (r.more()) {
    uint32_t field, wire;
    r.next(&field, &wire);
    on_field(r, field, wire);
  }
}

// Reads one occurrence of a repeated scalar field of element wire type `element_wire`, packed or
// not, counting its elements (protobuf parsers accept both encodings for every such field).
void count_repeated(Reader& r, uint32_t wire, uint32_t element_wire, uint64_t* count, const Parser& parser) {
  if (wire == element_wire) {
    r.skip(wire);
    ++*count;
  } else if (wire == kLengthDelimited && element_wire != kLengthDelimited) {
    const std::string_view s = r.bytes();
    if (element_wire == kVarint) {
      *count += count_varints(s, parser);
    } else {
      const size_t width = element_wire == kFixed32 ? 4 : 8;
      if (s.size() % width) {
        parser.fail("a packed field of " + std::to_string(width) + "-byte values holds " + std::to_string(s.size()) +
                    " bytes");
      }
      *count += s.size() / width;
    }
  } else {
    r.skip(wire);  // a wire type the field cannot have: protobuf keeps it as an unknown field
  }
}

// Appends a repeated varint field's values (int64 dims, ints), packed or not.
void read_varints(Reader& r, uint32_t wire, std::vector<int64_t>* out, const Parser& parser) {
  if (wire == kVarint) {
    out->push_back((int64_t)r.varint());
  } else if (wire == kLengthDelimited) {
    Reader packed(r.bytes(), parser);
    while (packed.more()) out->push_back((int64_t)packed.varint());
  } else {
    r.skip(wire);
  }
}

void parse_tensor(std::string_view bytes, OnnxTensor* t, const Parser& parser) {
  t->messages.push_back(bytes);
  for_each_field(bytes, parser, [&](Reader& r, uint32_t field, uint32_t wire) {
    switch (field) {
      case 1: read_varints(r, wire, &t->dims, parser); break;
      case 2:
        if (wire == kVarint) t->data_type = (int32_t)r.varint();
        else r.skip(wire);
        break;
      case 3:
        t->has_segment = t->has_segment || wire == kLengthDelimited;
        r.skip(wire);
        break;
      case 4: count_repeated(r, wire, kFixed32, &t->typed_counts[4], parser); break;
      case 5: count_repeated(r, wire, kVarint, &t->typed_counts[5], parser); break;
      case 6: count_repeated(r, wire, kLengthDelimited, &t->typed_counts[6], parser); break;
      case 7: count_repeated(r, wire, kVarint, &t->typed_counts[7], parser); break;
      case 8:
        if (wire == kLengthDelimited) t->name = r.bytes();
        else r.skip(wire);
        break;
      case 9:
        if (wire == kLengthDelimited) {
          t->raw_data = r.bytes();
          t->has_raw_data = true;
        } else {
          r.skip(wire);
        }
        break;
      case 10: count_repeated(r, wire, kFixed64, &t->typed_counts[10], parser); break;
      case 11: count_repeated(r, wire, kVarint, &t->typed_counts[11], parser); break;
      case 14:
        if (wire == kVarint) {
          // An enum: values it does not define stay unknown fields and leave the field as it was.
          const uint64_t location = r.varint();
          if (location <= 1) t->external = location == 1;
        } else {
          r.skip(wire);
        }
        break;
      default: r.skip(wire);
    }
  });
}

void parse_graph(std::string_view bytes, OnnxGraph* g, Parser& parser, int depth);

void parse_attribute(std::string_view bytes, OnnxAttribute* a, Parser& parser, int depth, Frame& frame) {
  std::vector<std::string_view> tensors, graphs;  // parsed once the type says which is meant
  for_each_field(bytes, parser, [&](Reader& r, uint32_t field, uint32_t wire) {
    if (field == 1 && wire == kLengthDelimited) {
      a->name = frame.name = r.bytes();
    } else if (field == 20 && wire == kVarint) {
      a->type = (int32_t)r.varint();
    } else if (field == 2 && wire == kFixed32) {
      const uint32_t bits = r.fixed32();
      std::memcpy(&a->f, &bits, 4);
    } else if (field == 3 && wire == kVarint) {
      a->i = (int64_t)r.varint();
    } else if (field == 4 && wire == kLengthDelimited) {
      a->s = r.bytes();
    } else if (field == 5 && wire == kLengthDelimited) {
      tensors.push_back(r.bytes());
    } else if (field == 6 && wire == kLengthDelimited) {
      graphs.push_back(r.bytes());
    } else if (field == 7 && wire == kFixed32) {
      const uint32_t bits = r.fixed32();
      float f;
      std::memcpy(&f, &bits, 4);
      a->floats.push_back(f);
    } else if (field == 7 && wire == kLengthDelimited) {
      const std::string_view s = r.bytes();
      if (s.size() % 4) parser.fail("packed floats of " + std::to_string(s.size()) + " bytes");
      const size_t old = a->floats.size();
      a->floats.resize(old + s.size() / 4);
      std::memcpy(a->floats.data() + old, s.data(), s.size());
    } else if (field == 8) {
      read_varints(r, wire, &a->ints, parser);
    } else if (field == 9 && wire == kLengthDelimited) {
      a->strings.push_back(r.bytes());
    } else {
      r.skip(wire);
    }
  });
  if (a->type == kOnnxTensor) {
    Scope scope(parser, "t");
    a->t = std::make_unique<OnnxTensor>();
    for (std::string_view piece : tensors) parse_tensor(piece, a->t.get(), parser);
  } else if (a->type == kOnnxGraph) {
    Scope scope(parser, "g");
    a->g = std::make_unique<OnnxGraph>();
    for (std::string_view piece : graphs) parse_graph(piece, a->g.get(), parser, depth + 1);
  }
}

void parse_node(std::string_view bytes, OnnxNode* n, Parser& parser, int depth, Frame& frame) {
  for_each_field(bytes, parser, [&](Reader& r, uint32_t field, uint32_t wire) {
    if (wire != kLengthDelimited) {
      r.skip(wire);
      return;
    }
    switch (field) {
      case 1: n->inputs.push_back(r.bytes()); break;
      case 2: n->outputs.push_back(r.bytes()); break;
      case 3: n->name = frame.name = r.bytes(); break;
      case 4: n->op_type = frame.detail = r.bytes(); break;
      case 5: {
        Scope scope(parser, "attribute", (int64_t)n->attributes.size());
        n->attributes.emplace_back();
        parse_attribute(r.bytes(), &n->attributes.back(), parser, depth, scope.frame());
        break;
      }
      case 7: n->domain = r.bytes(); break;
      default: r.skip(wire);
    }
  });
}

void parse_dim(std::string_view bytes, OnnxDim* d, const Parser& parser) {
  for_each_field(bytes, parser, [&](Reader& r, uint32_t field, uint32_t wire) {
    if (field == 1 && wire == kVarint) {  // oneof: the member set last wins
      d->kind = OnnxDim::kValue;
      d->value = (int64_t)r.varint();
    } else if (field == 2 && wire == kLengthDelimited) {
      d->kind = OnnxDim::kParam;
      d->param = r.bytes();
    } else {
      r.skip(wire);
    }
  });
}

// TypeProto.Tensor: elem_type and shape.
void parse_tensor_type(std::string_view bytes, OnnxValueInfo* v, const Parser& parser) {
  for_each_field(bytes, parser, [&](Reader& r, uint32_t field, uint32_t wire) {
    if (field == 1 && wire == kVarint) {
      v->elem_type = (int32_t)r.varint();
    } else if (field == 2 && wire == kLengthDelimited) {
      v->has_shape = true;
      for_each_field(r.bytes(), parser, [&](Reader& shape, uint32_t f, uint32_t w) {
        if (f == 1 && w == kLengthDelimited) {
          v->dims.emplace_back();
          parse_dim(shape.bytes(), &v->dims.back(), parser);
        } else {
          shape.skip(w);
        }
      });
    } else {
      r.skip(wire);
    }
  });
}

void parse_value_info(std::string_view bytes, OnnxValueInfo* v, Parser& parser, Frame& frame) {
  bool tensor_type_set = false;  // TypeProto's `value` is a oneof of tensor_type and other kinds
  for_each_field(bytes, parser, [&](Reader& r, uint32_t field, uint32_t wire) {
    if (field == 1 && wire == kLengthDelimited) {
      v->name = frame.name = r.bytes();
    } else if (field == 2 && wire == kLengthDelimited) {
      for_each_field(r.bytes(), parser, [&](Reader& type, uint32_t f, uint32_t w) {
        const bool other_kind = f == 4 || f == 5 || f == 7 || f == 8 || f == 9;
        if ((f == 1 || other_kind) && w == kLengthDelimited) {
          if (other_kind || !tensor_type_set) {  // switching members clears the one set before
            v->elem_type = 0;
            v->has_shape = false;
            v->dims.clear();
          }
          tensor_type_set = f == 1;
          const std::string_view member = type.bytes();
          if (f == 1) parse_tensor_type(member, v, parser);
        } else {
          type.skip(w);
        }
      });
    } else {
      r.skip(wire);
    }
  });
}

void parse_graph(std::string_view bytes, OnnxGraph* g, Parser& parser, int depth) {
  if (depth > kMaxOnnxGraphDepth) parser.fail("subgraphs nested more than " + std::to_string(kMaxOnnxGraphDepth) + " deep");
  for_each_field(bytes, parser, [&](Reader& r, uint32_t field, uint32_t wire) {
    if (wire != kLengthDelimited) {
      r.skip(wire);
      return;
    }
    switch (field) {
      case 1: {
        Scope scope(parser, "node", (int64_t)g->nodes.size());
        g->nodes.emplace_back();
        parse_node(r.bytes(), &g->nodes.back(), parser, depth, scope.frame());
        break;
      }
      case 2: g->name = r.bytes(); break;
      case 5: {
        Scope scope(parser, "initializer", (int64_t)g->initializers.size());
        g->initializers.emplace_back();
        parse_tensor(r.bytes(), &g->initializers.back(), parser);
        break;
      }
      case 11:
      case 12: {
        std::vector<OnnxValueInfo>& values = field == 11 ? g->inputs : g->outputs;
        Scope scope(parser, field == 11 ? "input" : "output", (int64_t)values.size());
        values.emplace_back();
        parse_value_info(r.bytes(), &values.back(), parser, scope.frame());
        break;
      }
      default: r.skip(wire);
    }
  });
}

void parse_opset(std::string_view bytes, std::pair<std::string_view, int64_t>* opset, const Parser& parser) {
  for_each_field(bytes, parser, [&](Reader& r, uint32_t field, uint32_t wire) {
    if (field == 1 && wire == kLengthDelimited) opset->first = r.bytes();
    else if (field == 2 && wire == kVarint) opset->second = (int64_t)r.varint();
    else r.skip(wire);
  });
}

// ONNX data types: the ones mnnpy reads, with the typed field that holds them without raw_data.
struct OnnxType {
  int32_t code;
  const char* numpy_name;
  size_t itemsize;
  int field;
};
constexpr OnnxType kReadTypes[] = {
    {1, "float32", 4, 4},  {2, "uint8", 1, 5},    {3, "int8", 1, 5},    {4, "uint16", 2, 5},     {5, "int16", 2, 5},
    {6, "int32", 4, 5},    {7, "int64", 8, 7},    {9, "bool", 1, 5},    {10, "float16", 2, 5},   {11, "float64", 8, 10},
    {12, "uint32", 4, 11}, {13, "uint64", 8, 11}, {16, "bfloat16", 2, 5},
};
// TensorProto.DataType's other names (8 and 14..28), which mnnpy has no dtype for.
constexpr const char* kUnreadTypeNames[] = {
    "STRING", nullptr, nullptr, nullptr, nullptr, nullptr, "COMPLEX64", "COMPLEX128", nullptr,
    "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1",
    "FLOAT8E8M0", "UINT2", "INT2", "FLOAT6E2M3", "FLOAT6E3M2",
};

std::string dims_list(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// Stores the low bytes of varints (protobuf's int32 -> narrower casts, as onnx's to_array does).
void store_varint(uint64_t v, size_t itemsize, bool is_bool, uint8_t* out) {
  if (is_bool) v = v != 0;
  std::memcpy(out, &v, itemsize);  // little-endian: the low bytes come first
}

}  // namespace

OnnxModel parse_onnx_model(std::string_view bytes) {
  Parser parser;
  OnnxModel m;
  for_each_field(bytes, parser, [&](Reader& r, uint32_t field, uint32_t wire) {
    if (field == 1 && wire == kVarint) {
      m.ir_version = (int64_t)r.varint();
    } else if (field == 2 && wire == kLengthDelimited) {
      m.producer_name = r.bytes();
    } else if (field == 3 && wire == kLengthDelimited) {
      m.producer_version = r.bytes();
    } else if (field == 7 && wire == kLengthDelimited) {
      Scope scope(parser, "graph");
      parse_graph(r.bytes(), &m.graph, parser, 1);
    } else if (field == 8 && wire == kLengthDelimited) {
      Scope scope(parser, "opset_import", (int64_t)m.opset_import.size());
      m.opset_import.emplace_back();
      parse_opset(r.bytes(), &m.opset_import.back(), parser);
    } else {
      r.skip(wire);
    }
  });
  return m;
}

OnnxArrayPlan plan_onnx_array(const OnnxTensor& t, const std::string& label) {
  if (t.external) {
    throw ValueError(label + " keeps its data in an external file; load the model with "
                     "onnx.load(path, load_external_data=True) and pass the ModelProto");
  }
  const OnnxType* type = nullptr;
  for (const OnnxType& candidate : kReadTypes) {
    if (candidate.code == t.data_type) type = &candidate;
  }
  const std::string code = std::to_string(t.data_type);
  if (!type) {
    const int unread = t.data_type - 8;
    if (unread >= 0 && unread < (int)(sizeof kUnreadTypeNames / sizeof *kUnreadTypeNames) && kUnreadTypeNames[unread]) {
      throw ValueError(label + " has ONNX data type " + code + " (" + kUnreadTypeNames[unread] +
                       "), which mnnpy has no dtype for");
    }
    throw ValueError(label + " has unknown ONNX data type " + code);
  }
  const std::string what = label + " (ONNX data type " + code + ", dims " + dims_list(t.dims) + ") cannot be read: ";
  if (t.has_segment) throw ValueError(what + "it is a segment of a larger tensor (TensorProto.segment)");
  if (t.dims.size() > kMaxTensorRank) {
    throw ValueError(what + "it has " + std::to_string(t.dims.size()) + " dimensions, more than the " +
                     std::to_string(kMaxTensorRank) + " NumPy allows");
  }
  // The element count, and the bytes with zero dimensions counted as one (NumPy's bound on a
  // shape), both checked for overflow before they are compared with the data.
  uint64_t count = 1, nonzero_bytes = type->itemsize;
  bool overflow = false;
  for (int64_t d : t.dims) {
    if (d < 0) throw ValueError(what + "negative dimensions are not allowed");
    overflow = overflow || __builtin_mul_overflow(nonzero_bytes, (uint64_t)std::max<int64_t>(d, 1), &nonzero_bytes);
    count *= (uint64_t)d;  // no larger than nonzero_bytes
  }
  if (overflow || nonzero_bytes > (uint64_t)INT64_MAX) throw ValueError(what + "its dims need more than 2**63 bytes");
  uint64_t available;
  if (t.has_raw_data) {
    if (t.raw_data.size() % type->itemsize) {
      throw ValueError(what + "raw_data holds " + std::to_string(t.raw_data.size()) + " bytes, not a whole number of " +
                       std::to_string(type->itemsize) + "-byte elements");
    }
    available = t.raw_data.size() / type->itemsize;
  } else {
    available = t.typed_counts[type->field];
  }
  if (available != count) {
    throw ValueError(what + "cannot reshape array of size " + std::to_string(available) + " into shape " +
                     shape_str(t.dims));
  }
  OnnxArrayPlan plan;
  plan.numpy_name = type->numpy_name;
  plan.has_dtype = dtype_from_name(type->numpy_name, &plan.dtype);
  plan.itemsize = type->itemsize;
  plan.field = type->field;
  plan.count = count;
  plan.nbytes = (size_t)(count * type->itemsize);
  if (plan.nbytes > memory_limit_bytes()) {
    throw ValueError(what + "its " + byte_size_str(plan.nbytes) + " are more than this process may allocate (" +
                     byte_size_str(memory_limit_bytes()) + ")");
  }
  return plan;
}

void decode_onnx_tensor(const OnnxTensor& t, const OnnxArrayPlan& plan, void* dest) {
  uint8_t* out = static_cast<uint8_t*>(dest);
  if (plan.nbytes >= kPrefaultBytes) prefault_for_writing(dest, plan.nbytes);
  const bool is_bool = plan.has_dtype && plan.dtype == DType::Bool;
  if (t.has_raw_data) {
    std::memcpy(out, t.raw_data.data(), plan.nbytes);
    if (is_bool) {
      for (size_t i = 0; i < plan.nbytes; ++i) out[i] = out[i] != 0;
    }
    return;
  }
  const int field = plan.field;
  const uint32_t element_wire = field == 4 ? kFixed32 : field == 10 ? kFixed64 : kVarint;
  // The fields were counted when the tensor was parsed; the bounds are checked again all the same.
  Parser parser;
  uint8_t* const end = out + plan.nbytes;
  auto room = [&](size_t n) {
    if ((size_t)(end - out) < n) parser.fail("tensor '" + std::string(t.name) + "' has more elements than it counted");
  };
  for (std::string_view message : t.messages) {
    for_each_field(message, parser, [&](Reader& r, uint32_t f, uint32_t wire) {
      if ((int)f != field || (wire != element_wire && wire != kLengthDelimited)) {
        r.skip(wire);
      } else if (element_wire == kVarint) {
        if (wire == kVarint) {
          room(plan.itemsize);
          store_varint(r.varint(), plan.itemsize, is_bool, out);
          out += plan.itemsize;
        } else {
          Reader packed(r.bytes(), parser);
          while (packed.more()) {
            room(plan.itemsize);
            store_varint(packed.varint(), plan.itemsize, is_bool, out);
            out += plan.itemsize;
          }
        }
      } else {
        const size_t width = element_wire == kFixed32 ? 4 : 8;
        const std::string_view s = wire == kLengthDelimited ? r.bytes()
                                                            : std::string_view(reinterpret_cast<const char*>(r.take(width)), width);
        room(s.size());
        std::memcpy(out, s.data(), s.size());
        out += s.size();
      }
    });
  }
  if (out != end) parser.fail("tensor '" + std::string(t.name) + "' has fewer elements than it counted");
}

}  // namespace host
}  // namespace mnnpy
