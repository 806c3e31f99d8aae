// Elementwise ops: unary and binary math, comparisons, logic, bit ops, Where and Cast.
// They have no kernel of their own: the executor fuses chains of them into one program of
// the codes registered here (mnnpy/elementwise_program.h), which a backend runs in one pass.
#include <algorithm>

#include "mnnpy/elementwise_program.h"
#include "mnnpy/op_registry.h"
#include "mnnpy/ops.h"

namespace mnnpy {

namespace {

enum UnaryRule : uint8_t {
  kFloatMath,   // integer/bool inputs become the smallest float that holds them
  kKeepInt,     // defined on integers too
  kIntOnly,     // integers and bool only (bitwise)
  kAnyToBool,   // any input, bool result
};
enum BinaryRule : uint8_t { kArith, kTrueDivide, kFloatOnly, kBitwise, kCompare, kLogical };

struct UnaryEntry { const char* name; int code; UnaryRule rule; const char* numpy_name; };
struct BinaryEntry { const char* name; int code; BinaryRule rule; const char* numpy_name; };

const UnaryEntry kUnary[] = {
    {"Neg", ew::kNeg, kKeepInt, "negative"},         {"Abs", ew::kAbs, kKeepInt, "absolute"},
    {"Sign", ew::kSign, kKeepInt, "sign"},           {"Square", ew::kSquare, kKeepInt, "square"},
    {"Sqrt", ew::kSqrt, kFloatMath, "sqrt"},         {"Rsqrt", ew::kRsqrt, kFloatMath, "rsqrt"},
    {"Reciprocal", ew::kReciprocal, kKeepInt, "reciprocal"},
    {"Exp", ew::kExp, kFloatMath, "exp"},            {"Expm1", ew::kExpm1, kFloatMath, "expm1"},
    {"Exp2", ew::kExp2, kFloatMath, "exp2"},         {"Log", ew::kLog, kFloatMath, "log"},
    {"Log1p", ew::kLog1p, kFloatMath, "log1p"},      {"Log2", ew::kLog2, kFloatMath, "log2"},
    {"Log10", ew::kLog10, kFloatMath, "log10"},      {"Sin", ew::kSin, kFloatMath, "sin"},
    {"Cos", ew::kCos, kFloatMath, "cos"},            {"Tan", ew::kTan, kFloatMath, "tan"},
    {"Asin", ew::kAsin, kFloatMath, "arcsin"},       {"Acos", ew::kAcos, kFloatMath, "arccos"},
    {"Atan", ew::kAtan, kFloatMath, "arctan"},       {"Sinh", ew::kSinh, kFloatMath, "sinh"},
    {"Cosh", ew::kCosh, kFloatMath, "cosh"},         {"Tanh", ew::kTanh, kFloatMath, "tanh"},
    {"Asinh", ew::kAsinh, kFloatMath, "arcsinh"},    {"Acosh", ew::kAcosh, kFloatMath, "arccosh"},
    {"Atanh", ew::kAtanh, kFloatMath, "arctanh"},    {"Floor", ew::kFloor, kKeepInt, "floor"},
    {"Ceil", ew::kCeil, kKeepInt, "ceil"},           {"Round", ew::kRint, kFloatMath, "rint"},
    {"Trunc", ew::kTrunc, kKeepInt, "trunc"},        {"Erf", ew::kErf, kFloatMath, "erf"},
    {"Erfc", ew::kErfc, kFloatMath, "erfc"},         {"Sigmoid", ew::kSigmoid, kFloatMath, "sigmoid"},
    {"Relu", ew::kRelu, kKeepInt, "relu"},           {"Relu6", ew::kRelu6, kKeepInt, "relu6"},
    {"Gelu", ew::kGelu, kFloatMath, "gelu"},         {"GeluTanh", ew::kGeluTanh, kFloatMath, "gelu_tanh"},
    {"Softplus", ew::kSoftplus, kFloatMath, "softplus"}, {"Softsign", ew::kSoftsign, kFloatMath, "softsign"},
    {"Selu", ew::kSelu, kFloatMath, "selu"},         {"Cbrt", ew::kCbrt, kFloatMath, "cbrt"},
    {"LogicalNot", ew::kLogicalNot, kAnyToBool, "logical_not"},
    {"BitwiseNot", ew::kBitwiseNot, kIntOnly, "invert"},
    {"IsNan", ew::kIsNan, kAnyToBool, "isnan"},      {"IsInf", ew::kIsInf, kAnyToBool, "isinf"},
    {"IsFinite", ew::kIsFinite, kAnyToBool, "isfinite"}, {"Signbit", ew::kSignbit, kAnyToBool, "signbit"},
    {"Identity", ew::kCopy, kKeepInt, "positive"},
    // The value unchanged with no gradient: straight-through estimators (fake quantization)
    // and targets that training must not move.
    {"StopGradient", ew::kCopy, kKeepInt, "stop_gradient"},
};

const BinaryEntry kBinary[] = {
    {"Add", ew::kAdd, kArith, "add"},                   {"Sub", ew::kSub, kArith, "subtract"},
    {"Mul", ew::kMul, kArith, "multiply"},              {"Div", ew::kDiv, kTrueDivide, "divide"},
    {"FloorDiv", ew::kFloorDiv, kArith, "floor_divide"}, {"Mod", ew::kMod, kArith, "remainder"},
    {"Fmod", ew::kFmod, kArith, "fmod"},                {"Pow", ew::kPow, kArith, "power"},
    {"Maximum", ew::kMaximum, kArith, "maximum"},       {"Minimum", ew::kMinimum, kArith, "minimum"},
    {"Fmax", ew::kFmax, kArith, "fmax"},                {"Fmin", ew::kFmin, kArith, "fmin"},
    {"Atan2", ew::kAtan2, kFloatOnly, "arctan2"},       {"Hypot", ew::kHypot, kFloatOnly, "hypot"},
    {"CopySign", ew::kCopysign, kFloatOnly, "copysign"},
    {"SquaredDifference", ew::kSquaredDiff, kArith, "squared_difference"},
    {"Equal", ew::kEqual, kCompare, "equal"},           {"NotEqual", ew::kNotEqual, kCompare, "not_equal"},
    {"Less", ew::kLess, kCompare, "less"},              {"LessEqual", ew::kLessEqual, kCompare, "less_equal"},
    {"Greater", ew::kGreater, kCompare, "greater"},     {"GreaterEqual", ew::kGreaterEqual, kCompare, "greater_equal"},
    {"LogicalAnd", ew::kLogicalAnd, kLogical, "logical_and"}, {"LogicalOr", ew::kLogicalOr, kLogical, "logical_or"},
    {"LogicalXor", ew::kLogicalXor, kLogical, "logical_xor"},
    {"BitwiseAnd", ew::kBitAnd, kBitwise, "bitwise_and"}, {"BitwiseOr", ew::kBitOr, kBitwise, "bitwise_or"},
    {"BitwiseXor", ew::kBitXor, kBitwise, "bitwise_xor"}, {"LeftShift", ew::kShiftLeft, kBitwise, "left_shift"},
    {"RightShift", ew::kShiftRight, kBitwise, "right_shift"},
    {"Gcd", ew::kGcd, kBitwise, "gcd"},                  {"Lcm", ew::kLcm, kBitwise, "lcm"},
    {"NextAfter", ew::kNextafter, kFloatOnly, "nextafter"},
};

template <class Entry, size_t N> const Entry* find_entry(const Entry (&table)[N], const std::string& name) {
  for (auto& e : table) if (name == e.name) return &e;
  return nullptr;
}

// Registered definitions of the table entries, looked up once.
template <class Entry, size_t N> const OpDef& op_of(const Entry (&table)[N], const Entry* e) {
  static const OpDef* defs[N] = {};
  const size_t i = e - table;
  if (!defs[i]) defs[i] = &get_op(e->name);
  return *defs[i];
}

bool is_half(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

std::string unsupported(const char* numpy_name, DType a) {
  return std::string("ufunc '") + numpy_name + "' not supported for the input type " + dtype_name(a);
}

std::vector<TensorType> infer_unary(const std::vector<TensorType>& in, int code) {
  return {TensorType{ew::unary_returns_bool(code) ? DType::Bool : in[0].dtype, in[0].shape}};
}

std::vector<TensorType> infer_binary(const std::vector<TensorType>& in, int code) {
  if (in[0].dtype != in[1].dtype) throw TypeError("binary op inputs must share a dtype (the builder casts them)");
  return {TensorType{ew::binary_returns_bool(code) ? DType::Bool : in[0].dtype,
                     broadcast_shapes(in[0].shape, in[1].shape)}};
}

std::vector<TensorType> infer_where(const std::vector<TensorType>& in, Attrs&) {
  if (in[0].dtype != DType::Bool) throw TypeError("Where condition must be bool");
  if (in[1].dtype != in[2].dtype) throw TypeError("Where branches must share a dtype");
  return {TensorType{in[1].dtype, broadcast_shapes(broadcast_shapes(in[0].shape, in[1].shape), in[2].shape)}};
}

std::vector<TensorType> infer_cast(const std::vector<TensorType>& in, Attrs& attrs) {
  const int64_t to = attrs.get_int("to");
  if (to < 0 || to >= kNumDTypes) throw ValueError("Cast: bad target dtype code " + std::to_string(to));
  return {TensorType{(DType)to, in[0].shape}};
}

struct Registration {
  Registration() {
    for (auto& e : kUnary) {
      OpDef def{e.name, 1, 1, [code = e.code](const std::vector<TensorType>& in, Attrs&) {
                  return infer_unary(in, code);
                }, {EwArity::Unary, e.code}, false};
      OpRegistrar{std::move(def)};
    }
    for (auto& e : kBinary) {
      OpDef def{e.name, 2, 2, [code = e.code](const std::vector<TensorType>& in, Attrs&) {
                  return infer_binary(in, code);
                }, {EwArity::Binary, e.code}, false};
      OpRegistrar{std::move(def)};
    }
    OpRegistrar{OpDef{"Where", 3, 3, infer_where, {EwArity::Ternary, 0}, false}};
    OpRegistrar{OpDef{"Cast", 1, 1, infer_cast, {EwArity::Cast, 0}, false}};
  }
};
Registration registration;

}  // namespace

bool is_elementwise_op(const std::string& op_name) {
  const OpDef* op = find_op(op_name);
  return op && op->elementwise.arity != EwArity::None;
}

std::vector<std::string> unary_op_names() {
  std::vector<std::string> r;
  for (auto& e : kUnary) r.push_back(e.name);
  return r;
}
std::vector<std::string> binary_op_names() {
  std::vector<std::string> r;
  for (auto& e : kBinary) r.push_back(e.name);
  return r;
}

Var unary(const std::string& op_name, const Var& x) {
  const UnaryEntry* e = find_entry(kUnary, op_name);
  if (!e) throw ValueError("unknown unary op '" + op_name + "'");
  DType t = x.type().dtype;
  Var in = x;
  switch (e->rule) {
    case kFloatMath:
      if (!is_float(t)) in = cast(in, t = promote_types(t, DType::Float16));
      break;
    case kKeepInt:
      if (t == DType::Bool) {
        if (e->code == ew::kNeg) {
          throw TypeError("The numpy boolean negative, the `-` operator, is not supported, use the `~` operator or "
                          "the logical_not function instead.");
        }
        if (e->code != ew::kAbs && e->code != ew::kCopy) in = cast(in, t = DType::Int8);
      }
      break;
    case kIntOnly:
      if (is_float(t)) throw TypeError(unsupported(e->numpy_name, t));
      break;
    case kAnyToBool:
      break;
  }
  if (is_half(t)) {
    Var r = make_op(op_of(kUnary, e), {cast(in, DType::Float32)});
    return ew::unary_returns_bool(e->code) ? r : cast(r, t);
  }
  return make_op(op_of(kUnary, e), {in});
}

// uint64 against a signed integer, exactly (their common type, float64, rounds values above 2**53):
// a negative signed value is below every uint64, any other compares as uint64.
static Var compare_uint64_signed(const BinaryEntry* e, const Var& a, const Var& b) {
  const bool a_unsigned = a.type().dtype == DType::UInt64;
  const Var& s = a_unsigned ? b : a;
  const Var negative = binary("Less", s, make_scalar(0.0, s.type().dtype));
  const Var as_unsigned = make_op(op_of(kBinary, e), {a_unsigned ? a : cast(a, DType::UInt64),
                                                      a_unsigned ? cast(b, DType::UInt64) : b});
  // The result where the signed operand is negative (the unsigned one is then the larger).
  bool when_negative = false;
  switch (e->code) {
    case ew::kNotEqual: when_negative = true; break;
    case ew::kGreater: case ew::kGreaterEqual: when_negative = a_unsigned; break;
    case ew::kLess: case ew::kLessEqual: when_negative = !a_unsigned; break;
    default: break;
  }
  return where(negative, make_scalar(when_negative ? 1.0 : 0.0, DType::Bool), as_unsigned);
}

Var binary(const std::string& op_name, const Var& a, const Var& b) {
  const BinaryEntry* e = find_entry(kBinary, op_name);
  if (!e) throw ValueError("unknown binary op '" + op_name + "'");
  const DType ta = a.type().dtype, tb = b.type().dtype;
  DType t = promote_types(ta, tb);
  // Check shapes first so a mismatch is reported before any dtype issue.
  broadcast_shapes(a.type().shape, b.type().shape);
  if (e->rule == kCompare && e->code <= ew::kGreaterEqual &&
      ((ta == DType::UInt64 && is_signed_int(tb)) || (tb == DType::UInt64 && is_signed_int(ta)))) {
    return compare_uint64_signed(e, a, b);
  }
  switch (e->rule) {
    case kArith:
      if (t == DType::Bool) {
        if (e->code == ew::kSub) {
          throw TypeError("numpy boolean subtract, the `-` operator, is not supported, use the bitwise_xor, the `^` "
                          "operator, or the logical_xor function instead.");
        }
        if (e->code != ew::kAdd && e->code != ew::kMul && e->code != ew::kMaximum && e->code != ew::kMinimum &&
            e->code != ew::kFmax && e->code != ew::kFmin) {
          t = DType::Int8;
        }
      }
      break;
    case kTrueDivide:
      if (!is_float(t)) t = DType::Float64;
      break;
    case kFloatOnly:
      if (!is_float(t)) t = promote_types(t, DType::Float16);
      break;
    case kBitwise:
      if (is_float(t)) {
        throw TypeError(std::string("ufunc '") + e->numpy_name + "' not supported for the input types " +
                        dtype_name(ta) + " and " + dtype_name(tb));
      }
      if (t == DType::Bool && (e->code == ew::kShiftLeft || e->code == ew::kShiftRight)) t = DType::Int8;
      break;
    case kCompare:
      break;
    case kLogical:
      t = DType::Bool;
      break;
  }
  const bool half = is_half(t);
  if (half && e->code == ew::kNextafter) {
    // Stepping to the next representable value cannot be done in float32 and rounded back.
    throw TypeError(std::string("nextafter is not supported for ") + dtype_name(t) + " in mnnpy");
  }
  const DType compute = half ? DType::Float32 : t;
  Var r = make_op(op_of(kBinary, e), {cast(a, compute), cast(b, compute)});
  if (half && !ew::binary_returns_bool(e->code)) r = cast(r, t);
  return r;
}

Var where(const Var& cond, const Var& a, const Var& b) {
  const DType t = promote_types(a.type().dtype, b.type().dtype);
  static const OpDef& where_op = get_op("Where");
  return make_op(where_op, {cast(cond, DType::Bool), cast(a, t), cast(b, t)});
}

}  // namespace mnnpy
