// CachedAttention: attention of new tokens over a language model's key/value cache
// (mnnpy/kv_cache.h), for mnnpy.llm's prefill and decode graphs.
//   inputs: q [Hq, S, D], k [Hkv, S, D], v [Hkv, S, D] float32 (the S new tokens' queries, keys
//           and values, rotary embedding applied), past int64 with one value: the tokens already
//           in the cache before these (0 <= past)
//   attrs:  cache (a kv_cache_create handle), layer, scale (float)
//   output: [Hq, S, D]: query s of head h attends to the cache's tokens 0 .. past + s of key/value
//           head h / (Hq / Hkv), softmax(q k * scale) v. The S keys and values are first written
//           into the cache at past .. past + S - 1 (the cache grows as needed).
#include <string>

#include "mnnpy/op_registry.h"

namespace mnnpy {

namespace {

std::vector<TensorType> infer_cached_attention(const std::vector<TensorType>& in, Attrs& attrs) {
  const std::string op = "CachedAttention";
  static const char* names[] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    if (in[i].dtype != DType::Float32) {
      throw TypeError(op + ": " + names[i] + " must be float32, got " + dtype_name(in[i].dtype));
    }
    if (in[i].shape.size() != 3) {
      throw ValueError(op + ": " + names[i] + " must be [heads, tokens, head_dim], got shape " +
                       shape_str(in[i].shape));
    }
  }
  const Shape &q = in[0].shape, &k = in[1].shape, &v = in[2].shape;
  if (k != v || q[1] != k[1] || q[2] != k[2]) {
    throw ValueError(op + ": q " + shape_str(q) + ", k " + shape_str(k) + " and v " + shape_str(v) +
                     " must share tokens and head_dim, k and v their shape");
  }
  if (k[0] == 0 || q[0] % k[0]) {
    throw ValueError(op + ": q's heads (" + std::to_string(q[0]) + ") must be a multiple of k's (" +
                     std::to_string(k[0]) + ")");
  }
  if (in[3].dtype != DType::Int64 || in[3].numel() != 1) {
    throw ValueError(op + ": past must be one int64 value, got " + dtype_name(in[3].dtype) + " " +
                     shape_str(in[3].shape));
  }
  for (const char* key : {"cache", "layer"}) {
    if (!attrs.has(key)) throw ValueError(op + ": attribute '" + key + "' is required");
  }
  if (attrs.get_int("layer") < 0) throw ValueError(op + ": layer must be >= 0");
  attrs.set("scale", attrs.has("scale") ? attrs.get_float("scale") : 1.0);
  return {TensorType{DType::Float32, q}};
}

OpDef cached_attention_def() {
  OpDef def;
  def.name = "CachedAttention";
  def.min_inputs = def.max_inputs = 4;
  def.infer = infer_cached_attention;
  return def;
}
MNNPY_REGISTER_OP(cached_attention_def());

}  // namespace

}  // namespace mnnpy
