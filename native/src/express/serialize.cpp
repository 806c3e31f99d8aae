// The graph file format (see docs/file_format.md for the layout). Saving walks the graph once
// in topological order; loading checks every field against the file before using it and then
// rebuilds each node through the same entry points the front-ends use, so each op re-validates
// its own inputs and attributes.
#include "mnnpy/serialize.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "mnnpy/limits.h"
#include "mnnpy/op_registry.h"

namespace mnnpy {

namespace {

constexpr char kMagic[8] = {'M', 'N', 'N', 'P', 'Y', '\0', 'G', 'R'};
constexpr uint64_t kHeaderSize = 128;
constexpr uint64_t kDataAlignment = 64;

// Limits that keep a hostile file from asking for absurd work; far above what real graphs need.
constexpr uint64_t kMaxNodes = uint64_t(1) << 24;
// Releasing a chain of nodes recurses once per node, so deeper graphs could exhaust the stack.
constexpr uint32_t kMaxDepth = 32768;
constexpr uint32_t kMaxNameLength = 4096;
constexpr uint32_t kMaxAttrStringLength = uint32_t(1) << 20;
constexpr uint32_t kMaxRank = 32;
constexpr uint32_t kMaxNodeInputs = uint32_t(1) << 16;
constexpr uint32_t kMaxNodeAttrs = 4096;
constexpr uint32_t kMaxNodeOutputs = 4096;
constexpr uint64_t kMaxTensorBytes = uint64_t(1) << 62;
// Smallest possible records, used to bound counts by section sizes before allocating.
constexpr uint64_t kMinNodeRecordBytes = 4 + 1 + 3 * 4 + 3 * 4 + 2;
constexpr uint64_t kMinOutputRecordBytes = 3 * 4;

enum : uint8_t { kKindOp = 0, kKindConst = 1, kKindPlaceholder = 2 };
enum : uint8_t { kAttrInt = 0, kAttrFloat = 1, kAttrInts = 2, kAttrString = 3 };

// Format dtype codes are fixed by the format, whatever order DType has.
// New dtypes take new codes at the end, so files written before them still load.
const DType kDTypeCodes[] = {DType::Bool,    DType::Int8,     DType::UInt8,    DType::Int16,   DType::Int32,
                             DType::Int64,   DType::Float16,  DType::BFloat16, DType::Float32, DType::Float64,
                             DType::UInt16,  DType::UInt32,   DType::UInt64};
constexpr int kNumDTypeCodes = sizeof(kDTypeCodes) / sizeof(kDTypeCodes[0]);

const char* const kDataFormats[] = {"NCHW", "NHWC", "NC4HW4"};

uint8_t dtype_code(DType t) {
  for (int i = 0; i < kNumDTypeCodes; ++i) {
    if (kDTypeCodes[i] == t) return (uint8_t)i;
  }
  throw ValueError(std::string("save: dtype ") + dtype_name(t) + " has no code in the file format");
}

bool known_data_format(const std::string& f) {
  for (const char* k : kDataFormats) {
    if (f == k) return true;
  }
  return false;
}

// Bytes of a tensor of this shape with every zero dimension counted as one, so that a shape
// whose other dimensions multiply past the limit is refused even when it holds no elements.
bool bounded_bytes(const Shape& shape, size_t itemsize, uint64_t* bytes) {
  uint64_t total = itemsize;
  for (int64_t d : shape) {
    if (d < 0) return false;
    if (__builtin_mul_overflow(total, (uint64_t)std::max<int64_t>(d, 1), &total) || total > kMaxTensorBytes) return false;
  }
  if (bytes) *bytes = total;
  return true;
}

// Strict UTF-8 (shortest forms, no surrogates, at most U+10FFFF), as Python decodes it: names
// and strings from a file become Python str objects and error messages.
bool valid_utf8(const uint8_t* p, size_t n) {
  size_t i = 0;
  while (i < n) {
    const uint8_t c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    int len;
    uint32_t cp, min;
    if ((c & 0xe0) == 0xc0) { len = 2; cp = c & 0x1f; min = 0x80; }
    else if ((c & 0xf0) == 0xe0) { len = 3; cp = c & 0x0f; min = 0x800; }
    else if ((c & 0xf8) == 0xf0) { len = 4; cp = c & 0x07; min = 0x10000; }
    else return false;
    if (n - i < (size_t)len) return false;
    for (int k = 1; k < len; ++k) {
      if ((p[i + k] & 0xc0) != 0x80) return false;
      cp = cp << 6 | (p[i + k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += len;
  }
  return true;
}

std::string type_str(const TensorType& t) { return std::string(dtype_name(t.dtype)) + " " + shape_str(t.shape); }

// ---------------------------------------------------------------- writing

class ByteWriter {
 public:
  void u8(uint8_t v) { buf_.push_back((char)v); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) buf_.push_back((char)(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) buf_.push_back((char)(v >> (8 * i)));
  }
  void i64(int64_t v) { u64((uint64_t)v); }
  void f64(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    u64(bits);
  }
  void str(const std::string& s) {
    u32((uint32_t)s.size());
    buf_ += s;
  }
  void bytes(const std::string& b) { buf_ += b; }
  void pad_to(size_t alignment) { buf_.resize((buf_.size() + alignment - 1) / alignment * alignment, '\0'); }
  void patch_u64(size_t at, uint64_t v) {
    for (int i = 0; i < 8; ++i) buf_[at + i] = (char)(v >> (8 * i));
  }
  size_t size() const { return buf_.size(); }
  const std::string& data() const { return buf_; }

 private:
  std::string buf_;
};

void check_length(const std::string& s, uint32_t limit, const std::string& what) {
  if (s.size() > limit) {
    throw ValueError("save: " + what + " is " + std::to_string(s.size()) + " bytes long; the file format holds at most " +
                     std::to_string(limit));
  }
}

void check_savable_type(const TensorType& t, const std::string& what) {
  if (t.shape.size() > kMaxRank) {
    throw ValueError("save: " + what + " has " + std::to_string(t.shape.size()) + " dimensions; the file format holds at most " +
                     std::to_string(kMaxRank));
  }
  if (!bounded_bytes(t.shape, dtype_size(t.dtype), nullptr)) throw ValueError("save: " + what + " has an unsupported shape " + shape_str(t.shape));
}

void write_attr(ByteWriter& w, const std::string& key, const AttrValue& value, const std::string& node_what) {
  check_length(key, kMaxNameLength, "an attribute name of " + node_what);
  w.str(key);
  if (auto p = std::get_if<int64_t>(&value)) {
    w.u8(kAttrInt);
    w.i64(*p);
  } else if (auto p = std::get_if<double>(&value)) {
    w.u8(kAttrFloat);
    w.f64(*p);
  } else if (auto p = std::get_if<std::vector<int64_t>>(&value)) {
    if (p->size() > UINT32_MAX) throw ValueError("save: attribute '" + key + "' of " + node_what + " is too long");
    w.u8(kAttrInts);
    w.u32((uint32_t)p->size());
    for (int64_t x : *p) w.i64(x);
  } else {
    const std::string& s = std::get<std::string>(value);
    check_length(s, kMaxAttrStringLength, "attribute '" + key + "' of " + node_what);
    w.u8(kAttrString);
    w.str(s);
  }
}

// Writes to a new file and closes it; removes the file unless commit() ran.
class TempFile {
 public:
  explicit TempFile(const std::string& target) : target_(target) {
    static std::atomic<uint64_t> counter{0};
    path_ = target + ".tmp" + std::to_string((long)getpid()) + "." + std::to_string(counter.fetch_add(1));
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0) fail("cannot write");
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }
  // Small pieces (records, small constants, padding) are gathered; large values go straight out.
  void write(const void* data, size_t n) {
    if (n >= kBufferBytes) {
      flush();
      write_out(data, n);
      return;
    }
    buffer_.append(static_cast<const char*>(data), n);
    if (buffer_.size() >= kBufferBytes) flush();
  }
  void zeros(size_t n) { buffer_.append(n, '\0'); }
  void commit() {
    flush();
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail("cannot write");
    if (::rename(path_.c_str(), target_.c_str()) != 0) fail("cannot replace");
    committed_ = true;
  }

 private:
  static constexpr size_t kBufferBytes = size_t(1) << 20;
  void flush() {
    write_out(buffer_.data(), buffer_.size());
    buffer_.clear();
  }
  void write_out(const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, std::min<size_t>(n, size_t(1) << 30));
      if (w < 0) {
        if (errno == EINTR) continue;
        fail("cannot write");
      }
      p += w;
      n -= (size_t)w;
    }
  }
  [[noreturn]] void fail(const char* what) {
    const int e = errno;
    throw FileError(e, target_, std::string(what) + " '" + target_ + "': " + std::strerror(e));
  }
  std::string target_, path_, buffer_;
  int fd_ = -1;
  bool committed_ = false;
};

// ---------------------------------------------------------------- reading

// Bounds-checked little-endian reads from [begin, end); errors name `context` and the field.
class Cursor {
 public:
  Cursor(const uint8_t* begin, const uint8_t* end, std::string context) : p_(begin), end_(end), context_(std::move(context)) {}
  uint64_t left() const { return (uint64_t)(end_ - p_); }
  const uint8_t* pos() const { return p_; }
  const std::string& context() const { return context_; }
  [[noreturn]] void fail(const std::string& message) const { throw ValueError(context_ + ": " + message); }
  void need(uint64_t n, const char* what) const {
    if (n > left()) fail(std::string("truncated ") + what + " (needs " + std::to_string(n) + " bytes, " + std::to_string(left()) + " left)");
  }
  void skip(uint64_t n, const char* what) {
    need(n, what);
    p_ += n;
  }
  uint8_t u8(const char* what) {
    need(1, what);
    return *p_++;
  }
  uint32_t u32(const char* what) { return (uint32_t)little_endian(4, what); }
  uint64_t u64(const char* what) { return little_endian(8, what); }
  int64_t i64(const char* what) { return (int64_t)u64(what); }
  double f64(const char* what) {
    const uint64_t bits = u64(what);
    double v;
    std::memcpy(&v, &bits, 8);
    return v;
  }
  std::string str(const char* what, uint32_t max_length) {
    const uint32_t n = u32(what);
    if (n > max_length) {
      fail(std::string(what) + " is " + std::to_string(n) + " bytes long (the limit is " + std::to_string(max_length) + ")");
    }
    need(n, what);
    if (!valid_utf8(p_, n)) fail(std::string(what) + " is not valid UTF-8");
    std::string s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }
  // A count of items of at least `item_bytes` each, checked against the bytes left and a cap.
  uint32_t count(const char* what, uint32_t cap, uint64_t item_bytes) {
    const uint32_t n = u32(what);
    if (n > cap) fail(std::string(what) + " " + std::to_string(n) + " exceeds the limit of " + std::to_string(cap));
    if ((uint64_t)n > left() / item_bytes) {
      fail(std::string("truncated record: ") + what + " " + std::to_string(n) + " needs more bytes than the " +
           std::to_string(left()) + " left");
    }
    return n;
  }

 private:
  uint64_t little_endian(int n, const char* what) {
    need((uint64_t)n, what);
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= (uint64_t)p_[i] << (8 * i);
    p_ += n;
    return v;
  }
  const uint8_t* p_;
  const uint8_t* end_;
  std::string context_;
};

TensorType read_type(Cursor& c, int output) {
  const std::string what = "output " + std::to_string(output);
  const uint8_t code = c.u8("output dtype");
  if (code >= kNumDTypeCodes) c.fail(what + " has unknown dtype code " + std::to_string(code));
  const uint8_t rank = c.u8("output rank");
  if (rank > kMaxRank) c.fail(what + " has rank " + std::to_string(rank) + " (the limit is " + std::to_string(kMaxRank) + ")");
  c.need((uint64_t)rank * 8, "output shape");
  TensorType t;
  t.dtype = kDTypeCodes[code];
  t.shape.resize(rank);
  for (auto& d : t.shape) d = c.i64("output shape");
  if (!bounded_bytes(t.shape, dtype_size(t.dtype), nullptr)) c.fail(what + " has an invalid or too large shape " + shape_str(t.shape));
  return t;
}

AttrValue read_attr_value(Cursor& c, const std::string& key) {
  const uint8_t type = c.u8("attribute type");
  switch (type) {
    case kAttrInt:
      return c.i64("attribute value");
    case kAttrFloat:
      return c.f64("attribute value");
    case kAttrInts: {
      const uint32_t n = c.count("attribute list length", UINT32_MAX, 8);
      std::vector<int64_t> v(n);
      for (auto& x : v) x = c.i64("attribute list");
      return v;
    }
    case kAttrString:
      return c.str("attribute string", kMaxAttrStringLength);
    default:
      c.fail("attribute '" + key + "' has unknown type code " + std::to_string(type));
  }
}

struct LoadContext {
  const uint8_t* base;
  uint32_t minor;
  uint64_t data_offset, data_size;
  std::shared_ptr<MappedFile> mapping;
};

std::shared_ptr<Tensor> mapped_tensor(const LoadContext& ctx, Cursor& c, const TensorType& type) {
  const uint64_t offset = c.u64("constant data offset"), nbytes = c.u64("constant data size");
  if (nbytes != type.nbytes()) {
    c.fail("constant of " + type_str(type) + " needs " + std::to_string(type.nbytes()) + " bytes but the file gives " +
           std::to_string(nbytes));
  }
  if (offset % kDataAlignment != 0) c.fail("constant data offset " + std::to_string(offset) + " is not 64-byte aligned");
  if (offset > ctx.data_size || nbytes > ctx.data_size - offset) {
    c.fail("constant data [" + std::to_string(offset) + ", +" + std::to_string(nbytes) + ") lies outside the data section of " +
           std::to_string(ctx.data_size) + " bytes");
  }
  if (nbytes == 0) return Tensor::allocate(type);  // a valid pointer even past the mapping's end
  auto tensor = std::make_shared<Tensor>();
  tensor->type = type;
  tensor->data = const_cast<uint8_t*>(ctx.base + ctx.data_offset + offset);
  tensor->owner = ctx.mapping;
  return tensor;
}

std::shared_ptr<Node> read_node(const LoadContext& ctx, Cursor& c, const std::vector<std::shared_ptr<Node>>& nodes,
                                const std::vector<uint32_t>& depth, uint32_t* node_depth) {
  const uint8_t kind = c.u8("node kind");
  if (kind > kKindPlaceholder) c.fail("unknown node kind " + std::to_string(kind));
  const std::string op_name = c.str("op name", kMaxNameLength);
  const std::string name = c.str("node name", kMaxNameLength);
  const std::string format = c.str("data format", kMaxNameLength);
  if (!known_data_format(format)) c.fail("unknown data format '" + format + "'");

  const uint32_t n_inputs = c.count("input count", kMaxNodeInputs, 8);
  std::vector<Var> inputs;
  inputs.reserve(n_inputs);
  uint32_t deepest = 0;
  const size_t self = nodes.size();
  for (uint32_t k = 0; k < n_inputs; ++k) {
    const uint32_t from = c.u32("input node"), output = c.u32("input output");
    if (from >= self) {
      c.fail("input " + std::to_string(k) + " refers to node " + std::to_string(from) + ", which does not come before node " +
             std::to_string(self));
    }
    if (output >= nodes[from]->outputs.size()) {
      c.fail("input " + std::to_string(k) + " refers to output " + std::to_string(output) + " of node " + std::to_string(from) +
             ", which has " + std::to_string(nodes[from]->outputs.size()));
    }
    inputs.push_back(Var{nodes[from], (int)output});
    deepest = std::max(deepest, depth[from]);
  }
  if (deepest >= kMaxDepth) c.fail("the graph is deeper than " + std::to_string(kMaxDepth) + " nodes");
  *node_depth = deepest + 1;

  const uint32_t n_attrs = c.count("attribute count", kMaxNodeAttrs, 4 + 1);
  Attrs attrs;
  for (uint32_t k = 0; k < n_attrs; ++k) {
    std::string key = c.str("attribute name", kMaxNameLength);
    AttrValue value = read_attr_value(c, key);
    if (attrs.has(key)) c.fail("attribute '" + key + "' appears twice");
    attrs.set(key, std::move(value));
  }

  const uint32_t n_outputs = c.count("output count", kMaxNodeOutputs, 2);
  if (n_outputs == 0) c.fail("a node must have at least one output");
  std::vector<TensorType> types;
  types.reserve(n_outputs);
  for (uint32_t k = 0; k < n_outputs; ++k) types.push_back(read_type(c, (int)k));

  std::shared_ptr<Node> node;
  if (kind == kKindConst || kind == kKindPlaceholder) {
    const char* expected = kind == kKindConst ? "Const" : "Input";
    if (op_name != expected) c.fail(std::string("a ") + (kind == kKindConst ? "constant" : "placeholder") + " node names op '" + op_name + "'");
    if (n_inputs != 0 || n_attrs != 0 || n_outputs != 1) c.fail(std::string(expected) + " nodes have no inputs or attributes and one output");
    try {
      node = kind == kKindConst ? make_const(mapped_tensor(ctx, c, types[0]), format).node
                                : make_placeholder(types[0], format).node;
    } catch (const MemoryError& e) {
      throw MemoryError(c.context() + ": " + e.what());
    }
  } else {
    if (op_name == "Const" || op_name == "Input") c.fail("op '" + op_name + "' is stored as a computed node");
    if (!find_op(op_name)) c.fail("unknown op '" + op_name + "'");
    std::vector<Var> outs;
    try {
      outs = make_op_multi(op_name, std::move(inputs), std::move(attrs));
    } catch (const MemoryError& e) {
      throw MemoryError(c.context() + ": " + op_name + ": " + e.what());  // a sound file this machine cannot hold
    } catch (const std::exception& e) {
      // Whatever an op's checks reject in a file is a damaged file.
      c.fail(op_name + ": " + e.what());
    }
    if (outs.size() != n_outputs) {
      c.fail(op_name + " gives " + std::to_string(outs.size()) + " outputs but the file declares " + std::to_string(n_outputs));
    }
    node = outs[0].node;
    for (uint32_t k = 0; k < n_outputs; ++k) {
      if (!(node->outputs[k] == types[k])) {
        c.fail(op_name + " output " + std::to_string(k) + " is " + type_str(node->outputs[k]) + " but the file declares " +
               type_str(types[k]));
      }
    }
  }
  if (c.left() != 0 && ctx.minor <= kGraphFormatMinor) c.fail(std::to_string(c.left()) + " unexpected bytes at the end of the record");
  node->name = name;
  node->data_format = format;
  return node;
}

uint64_t header_u64(const uint8_t* head, int at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= (uint64_t)head[at + i] << (8 * i);
  return v;
}
uint32_t header_u32(const uint8_t* head, int at) { return (uint32_t)(header_u64(head, at) & 0xffffffffu); }

void check_section(uint64_t offset, uint64_t size, uint64_t header_size, uint64_t file_size, const char* what) {
  if (offset < header_size || offset > file_size || size > file_size - offset) {
    throw ValueError(std::string(what) + " [" + std::to_string(offset) + ", +" + std::to_string(size) +
                     ") lies outside the file's " + std::to_string(file_size) + " bytes");
  }
}

LoadedGraph load_mapped(const std::shared_ptr<MappedFile>& mapping) {
  const uint64_t file_size = mapping->size;
  uint8_t head[kHeaderSize] = {};
  const size_t got = (size_t)std::min<uint64_t>(file_size, kHeaderSize);
  if (got) std::memcpy(head, mapping->data, got);
  if (std::memcmp(head, kMagic, std::min<size_t>(got, sizeof(kMagic))) != 0) {
    throw ValueError("bad magic: not an mnnpy graph file");
  }
  if (got < kHeaderSize) {
    throw ValueError("truncated file: " + std::to_string(got) + " bytes, shorter than the " + std::to_string(kHeaderSize) + "-byte header");
  }
  const uint32_t major = header_u32(head, 8), minor = header_u32(head, 12);
  const std::string ours = std::to_string(kGraphFormatMajor) + "." + std::to_string(kGraphFormatMinor);
  const std::string theirs = std::to_string(major) + "." + std::to_string(minor);
  if (major > kGraphFormatMajor) {
    throw ValueError("file format version " + theirs + " is newer than this mnnpy reads (" + ours + "); update mnnpy");
  }
  if (major < 1) throw ValueError("unsupported file format version " + theirs + " (this mnnpy reads " + ours + ")");
  const uint64_t header_size = header_u32(head, 16);
  const uint32_t flags = header_u32(head, 20);
  const uint64_t declared_size = header_u64(head, 24);
  if (declared_size > file_size) {
    throw ValueError("truncated file: the header declares " + std::to_string(declared_size) + " bytes but the file has " +
                     std::to_string(file_size));
  }
  if (declared_size < file_size) {
    throw ValueError("the file has " + std::to_string(file_size) + " bytes but its header declares " + std::to_string(declared_size));
  }
  if (header_size < kHeaderSize || header_size > file_size) throw ValueError("bad header size " + std::to_string(header_size));
  if (flags != 0 && minor <= kGraphFormatMinor) throw ValueError("unknown header flags " + std::to_string(flags));
  const uint64_t nodes_offset = header_u64(head, 32), nodes_size = header_u64(head, 40), node_count = header_u64(head, 48);
  const uint64_t outputs_offset = header_u64(head, 56), outputs_size = header_u64(head, 64), output_count = header_u64(head, 72);
  const uint64_t data_offset = header_u64(head, 80), data_size = header_u64(head, 88);
  check_section(nodes_offset, nodes_size, header_size, file_size, "node table");
  check_section(outputs_offset, outputs_size, header_size, file_size, "output table");
  check_section(data_offset, data_size, header_size, file_size, "data section");
  if (data_offset % kDataAlignment != 0) throw ValueError("data section offset " + std::to_string(data_offset) + " is not 64-byte aligned");
  if (node_count > kMaxNodes) throw ValueError("node count " + std::to_string(node_count) + " exceeds the limit of " + std::to_string(kMaxNodes));
  if (node_count > nodes_size / kMinNodeRecordBytes) {
    throw ValueError("truncated node table: " + std::to_string(node_count) + " nodes cannot fit in " + std::to_string(nodes_size) + " bytes");
  }
  if (output_count > outputs_size / kMinOutputRecordBytes) {
    throw ValueError("truncated output table: " + std::to_string(output_count) + " outputs cannot fit in " +
                     std::to_string(outputs_size) + " bytes");
  }

  const uint8_t* bytes = mapping->data;
  LoadContext ctx{bytes, minor, data_offset, data_size, mapping};

  std::vector<std::shared_ptr<Node>> nodes;
  std::vector<uint32_t> depth;
  nodes.reserve((size_t)node_count);
  depth.reserve((size_t)node_count);
  Cursor table(bytes + nodes_offset, bytes + nodes_offset + nodes_size, "node table");
  for (uint64_t i = 0; i < node_count; ++i) {
    const std::string context = "node " + std::to_string(i);
    const uint32_t record_size = table.u32("node record size");
    table.need(record_size, (context + " record").c_str());
    Cursor record(table.pos(), table.pos() + record_size, context);
    table.skip(record_size, "node record");
    uint32_t d = 0;
    nodes.push_back(read_node(ctx, record, nodes, depth, &d));
    depth.push_back(d);
  }
  if (table.left() != 0) table.fail(std::to_string(table.left()) + " unexpected bytes after the last node");

  LoadedGraph g;
  Cursor outs(bytes + outputs_offset, bytes + outputs_offset + outputs_size, "output table");
  g.outputs.reserve((size_t)output_count);
  g.names.reserve((size_t)output_count);
  for (uint64_t i = 0; i < output_count; ++i) {
    const uint32_t from = outs.u32("output node"), output = outs.u32("output index");
    std::string name = outs.str("output name", kMaxNameLength);
    if (from >= nodes.size()) {
      outs.fail("output " + std::to_string(i) + " refers to node " + std::to_string(from) + " of " + std::to_string(nodes.size()));
    }
    if (output >= nodes[from]->outputs.size()) {
      outs.fail("output " + std::to_string(i) + " refers to output " + std::to_string(output) + " of node " + std::to_string(from) +
                ", which has " + std::to_string(nodes[from]->outputs.size()));
    }
    g.outputs.push_back(Var{nodes[from], (int)output});
    g.names.push_back(std::move(name));
  }
  if (outs.left() != 0 && minor <= kGraphFormatMinor) outs.fail(std::to_string(outs.left()) + " unexpected bytes after the last output");
  for (const auto& node : nodes) {
    if (!node->name.empty() && node->outputs.size() == 1) g.named_nodes.push_back({node->name, Var{node, 0}});
  }
  return g;
}

}  // namespace

void save_graph(const std::vector<Var>& outputs, const std::string& path) {
  // Outputs already computed from constants alone are saved as their values.
  std::unordered_set<Node*> frozen;
  for (const Var& v : outputs) {
    if (!v.valid()) throw ValueError("save: an output is an empty Var");
    if (v.index < 0 || v.index >= (int)v.node->outputs.size()) throw ValueError("save: an output refers to a missing node output");
    Node* n = v.node.get();
    if (n->kind == NodeKind::Op && !n->uses_placeholder && n->outputs.size() == 1 && n->computed()) frozen.insert(n);
  }
  auto is_leaf = [&](Node* n) { return n->kind != NodeKind::Op || frozen.count(n) != 0; };

  // Topological order by an iterative post-order walk (graphs can be deep).
  std::vector<Node*> order;
  std::unordered_map<Node*, uint32_t> index;
  std::vector<std::pair<Node*, size_t>> stack;
  for (const Var& v : outputs) {
    if (index.count(v.node.get())) continue;
    stack.push_back({v.node.get(), 0});
    while (!stack.empty()) {
      Node* n = stack.back().first;
      size_t& next = stack.back().second;
      if (!is_leaf(n) && next < n->inputs.size()) {
        Node* in = n->inputs[next++].node.get();
        if (!index.count(in)) stack.push_back({in, 0});
        continue;
      }
      stack.pop_back();
      if (index.count(n)) continue;
      if (order.size() >= kMaxNodes) throw ValueError("save: the graph has more than " + std::to_string(kMaxNodes) + " nodes");
      index[n] = (uint32_t)order.size();
      order.push_back(n);
    }
  }

  ByteWriter table;
  std::vector<uint32_t> depth(order.size(), 1);
  std::vector<std::shared_ptr<Tensor>> blobs;  // owned: another thread may replace a node's value meanwhile
  std::unordered_map<const Tensor*, uint64_t> blob_offset;
  uint64_t data_size = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    Node* n = order[i];
    const std::string what = "node '" + (n->name.empty() ? n->op->name : n->name) + "'";
    const uint8_t kind = n->kind == NodeKind::Placeholder ? kKindPlaceholder : is_leaf(n) ? kKindConst : kKindOp;
    check_length(n->name, kMaxNameLength, "the name of " + what);
    if (!known_data_format(n->data_format)) throw ValueError("save: " + what + " has unknown data format '" + n->data_format + "'");
    ByteWriter rec;
    rec.u8(kind);
    rec.str(kind == kKindOp ? n->op->name : kind == kKindConst ? "Const" : "Input");
    rec.str(n->name);
    rec.str(n->data_format);
    if (kind == kKindOp) {
      if (n->inputs.size() > kMaxNodeInputs) throw ValueError("save: " + what + " has too many inputs");
      rec.u32((uint32_t)n->inputs.size());
      for (const Var& in : n->inputs) {
        const uint32_t from = index.at(in.node.get());
        depth[i] = std::max(depth[i], depth[from] + 1);
        rec.u32(from);
        rec.u32((uint32_t)in.index);
      }
      if (depth[i] > kMaxDepth) throw ValueError("save: the graph is deeper than " + std::to_string(kMaxDepth) + " nodes");
      if (n->attrs.items().size() > kMaxNodeAttrs) throw ValueError("save: " + what + " has too many attributes");
      rec.u32((uint32_t)n->attrs.items().size());
      for (const auto& [key, value] : n->attrs.items()) write_attr(rec, key, value, what);
      if (n->outputs.empty() || n->outputs.size() > kMaxNodeOutputs) throw ValueError("save: " + what + " has an unsupported output count");
      rec.u32((uint32_t)n->outputs.size());
    } else {
      rec.u32(0);
      rec.u32(0);
      rec.u32(1);
    }
    const size_t n_types = kind == kKindOp ? n->outputs.size() : 1;
    for (size_t k = 0; k < n_types; ++k) {
      const TensorType& t = n->outputs[k];
      check_savable_type(t, what);
      rec.u8(dtype_code(t.dtype));
      rec.u8((uint8_t)t.shape.size());
      for (int64_t d : t.shape) rec.i64(d);
    }
    if (kind == kKindConst) {
      const TensorType& t = n->outputs[0];
      std::shared_ptr<Tensor> value = n->value(0);
      if (!value || value->nbytes() != t.nbytes()) throw ValueError("save: " + what + " has no value of " + type_str(t));
      auto it = blob_offset.find(value.get());
      uint64_t offset;
      if (it != blob_offset.end()) {
        offset = it->second;
      } else {
        offset = data_size;
        blob_offset[value.get()] = offset;
        blobs.push_back(std::move(value));
        data_size += (t.nbytes() + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
      }
      rec.u64(offset);
      rec.u64(t.nbytes());
    }
    if (rec.size() > UINT32_MAX) throw ValueError("save: " + what + " is too large to store");
    table.u32((uint32_t)rec.size());
    table.bytes(rec.data());
  }

  ByteWriter outs;
  for (const Var& v : outputs) {
    check_length(v.node->name, kMaxNameLength, "an output name");
    outs.u32(index.at(v.node.get()));
    outs.u32((uint32_t)v.index);
    outs.str(v.node->name);
  }

  const uint64_t nodes_offset = kHeaderSize, outputs_offset = nodes_offset + table.size();
  const uint64_t data_offset = (outputs_offset + outs.size() + kDataAlignment - 1) / kDataAlignment * kDataAlignment;
  ByteWriter header;
  header.bytes(std::string(kMagic, sizeof(kMagic)));
  header.u32(kGraphFormatMajor);
  header.u32(kGraphFormatMinor);
  header.u32((uint32_t)kHeaderSize);
  header.u32(0);  // flags
  header.u64(data_offset + data_size);
  header.u64(nodes_offset);
  header.u64(table.size());
  header.u64(order.size());
  header.u64(outputs_offset);
  header.u64(outs.size());
  header.u64(outputs.size());
  header.u64(data_offset);
  header.u64(data_size);
  header.pad_to(kHeaderSize);

  TempFile file(path);
  file.write(header.data().data(), header.size());
  file.write(table.data().data(), table.size());
  file.write(outs.data().data(), outs.size());
  file.zeros(data_offset - (outputs_offset + outs.size()));
  for (const auto& blob : blobs) {
    const size_t n = blob->nbytes();
    file.write(blob->data, n);
    file.zeros((kDataAlignment - n % kDataAlignment) % kDataAlignment);
  }
  file.commit();
}

LoadedGraph load_graph(const std::string& path) {
  // MAP_PRIVATE with write access: constants are never written, but if something did write,
  // the change would stay private instead of faulting or reaching the file.
  const std::shared_ptr<MappedFile> mapping = map_file(path, /*writable=*/true);
  try {
    return load_mapped(mapping);
  } catch (const ValueError& e) {
    throw ValueError("cannot load '" + path + "': " + e.what());
  } catch (const MemoryError& e) {
    throw MemoryError("cannot load '" + path + "': " + e.what());
  }
}

}  // namespace mnnpy
