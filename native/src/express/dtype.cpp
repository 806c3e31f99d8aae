#include "mnnpy/dtype.h"

namespace mnnpy {

namespace {
// Indexed by the DType value.
const char* const kNames[kNumDTypes] = {"bool",    "int8",    "uint8",   "int16",  "int32",  "int64", "float16",
                                        "bfloat16", "float32", "float64", "uint16", "uint32", "uint64"};
const size_t kSizes[kNumDTypes] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8, 2, 4, 8};
// Order in which promotion looks for the smallest common type.
const DType kPromotionOrder[kNumDTypes] = {DType::Bool,    DType::UInt8,    DType::Int8,    DType::UInt16, DType::Int16,
                                           DType::UInt32,  DType::Int32,    DType::UInt64,  DType::Int64,  DType::Float16,
                                           DType::BFloat16, DType::Float32, DType::Float64};
}  // namespace

size_t dtype_size(DType t) { return kSizes[(int)t]; }
const char* dtype_name(DType t) { return kNames[(int)t]; }

bool dtype_from_name(const std::string& name, DType* out) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (name == kNames[i]) {
      *out = (DType)i;
      return true;
    }
  }
  return false;
}

bool can_cast_safely(DType from, DType to) {
  if (from == to || from == DType::Bool) return true;
  switch (from) {
    case DType::UInt8:
      return to != DType::Bool && to != DType::Int8;
    case DType::Int8:
      return to != DType::Bool && !is_unsigned_int(to);
    case DType::UInt16:
      return to == DType::UInt32 || to == DType::UInt64 || to == DType::Int32 || to == DType::Int64 ||
             to == DType::Float32 || to == DType::Float64;
    case DType::UInt32:
      return to == DType::UInt64 || to == DType::Int64 || to == DType::Float64;
    case DType::UInt64:
      return to == DType::Float64;
    case DType::Int16:
      return to == DType::Int32 || to == DType::Int64 || to == DType::Float32 || to == DType::Float64;
    case DType::Int32:
      return to == DType::Int64 || to == DType::Float64;
    case DType::Int64:
      return to == DType::Float64;
    case DType::Float16:
    case DType::BFloat16:
      return to == DType::Float32 || to == DType::Float64;
    case DType::Float32:
      return to == DType::Float64;
    default:
      return false;
  }
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  for (DType c : kPromotionOrder) {
    if (can_cast_safely(a, c) && can_cast_safely(b, c)) return c;
  }
  return DType::Float64;
}

}  // namespace mnnpy
