// Host library: runs on host memory after the inputs were synchronized to the host.
// Order-preserving unsigned keys of every sortable dtype, for radix sorts and for telling equal
// values apart: integers flip their sign bit, floats flip the sign bit of positives and every bit
// of negatives, NaN goes above +inf. key() is invertible (value() turns a sorted key back into its
// value); canon() gives equal values equal keys (-0.0 = 0.0, every NaN alike).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "mnnpy/dtype.h"

namespace mnnpy {
namespace host {
namespace sort_keys {

template <class T>
struct UnsignedKeys {
  using Storage = T;
  using Key = T;
  static constexpr bool kFloat = false;
  static Key key(Storage v) { return v; }
  static Key canon(Storage v) { return v; }
  static Storage value(Key k) { return k; }
};

struct BoolKeys : UnsignedKeys<uint8_t> {
  static Key key(Storage v) { return v != 0; }
  static Key canon(Storage v) { return v != 0; }
};

template <class T>
struct SignedKeys {
  using Storage = T;
  using Key = std::make_unsigned_t<T>;
  static constexpr bool kFloat = false;
  static constexpr Key kSign = Key(Key(1) << (8 * sizeof(Key) - 1));
  static Key key(Storage v) { return Key(Key(v) ^ kSign); }
  static Key canon(Storage v) { return key(v); }
  static Storage value(Key k) { return Storage(Key(k ^ kSign)); }
};

// IEEE formats by their bits; kInf is +inf's pattern, anything above it (sign cleared) is NaN.
template <class U, U kInf>
struct FloatKeys {
  using Storage = U;
  using Key = U;
  static constexpr bool kFloat = true;
  static constexpr int kBits = 8 * sizeof(U);
  static constexpr Key kSign = Key(Key(1) << (kBits - 1));
  static constexpr Key kAbs = Key(~kSign);
  static constexpr Key kNanKey = Key(~Key(0));
  static constexpr Key kInfBits = kInf;
  static Key order(Key u) {
    const Key negative = Key(Key(0) - Key(u >> (kBits - 1)));  // all ones when the sign is set
    return Key(u ^ Key(negative | kSign));
  }
  static Key key(Storage u) {
    if (Key(u & kAbs) > kInf) u = Key(u & kAbs);  // every NaN above +inf
    return order(u);
  }
  static Key canon(Storage u) {
    const Key a = Key(u & kAbs);
    if (a > kInf) return kNanKey;
    return a == 0 ? kSign : order(u);
  }
  static Storage value(Key k) {
    const Key positive_mask = Key(Key(0) - Key(Key(1) - Key(k >> (kBits - 1))));  // all ones for negatives
    return Storage(k ^ Key(positive_mask | kSign));
  }
};

using F16Keys = FloatKeys<uint16_t, 0x7c00>;
using BF16Keys = FloatKeys<uint16_t, 0x7f80>;
using F32Keys = FloatKeys<uint32_t, 0x7f800000u>;
using F64Keys = FloatKeys<uint64_t, 0x7ff0000000000000ull>;

template <class Tr>
struct Tag {
  using type = Tr;
};

template <class Fn>
void with_keys(DType dt, Fn&& fn) {
  switch (dt) {
    case DType::Bool: return fn(Tag<BoolKeys>{});
    case DType::Int8: return fn(Tag<SignedKeys<int8_t>>{});
    case DType::UInt8: return fn(Tag<UnsignedKeys<uint8_t>>{});
    case DType::Int16: return fn(Tag<SignedKeys<int16_t>>{});
    case DType::Int32: return fn(Tag<SignedKeys<int32_t>>{});
    case DType::Int64: return fn(Tag<SignedKeys<int64_t>>{});
    case DType::UInt16: return fn(Tag<UnsignedKeys<uint16_t>>{});
    case DType::UInt32: return fn(Tag<UnsignedKeys<uint32_t>>{});
    case DType::UInt64: return fn(Tag<UnsignedKeys<uint64_t>>{});
    case DType::Float16: return fn(Tag<F16Keys>{});
    case DType::BFloat16: return fn(Tag<BF16Keys>{});
    case DType::Float32: return fn(Tag<F32Keys>{});
    case DType::Float64: return fn(Tag<F64Keys>{});
  }
  throw std::logic_error(std::string("sort: unsupported dtype ") + dtype_name(dt));
}

// True when the canonical key stands for a NaN.
template <class Tr>
inline bool is_nan_key(typename Tr::Key k) {
  if constexpr (Tr::kFloat) {
    return k == Tr::kNanKey;
  } else {
    (void)k;
    return false;
  }
}

}  // namespace sort_keys
}  // namespace host
}  // namespace mnnpy
