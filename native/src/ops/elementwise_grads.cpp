// Gradient rules of the elementwise ops (unary math, binary arithmetic, Where, Cast). Each
// rule is written with the elementwise ops themselves, so a backward pass fuses into the same
// single-pass loops as the forward one. Piecewise-constant ops (floor, sign, comparisons) pass
// zero gradient; ties of maximum/minimum split the gradient evenly, as PyTorch does.
#include <cmath>

#include "mnnpy/op_registry.h"
#include "ops/grad_common.h"

namespace mnnpy {

namespace {

using namespace grad;

constexpr double kPi = 3.14159265358979323846;

// A unary rule from dy/dx written with x (input), y (output) and g (output gradient).
template <class F> void unary_rule(const char* name, F derivative_times_g) {
  GradRegistrar(name, [derivative_times_g](const GradContext& c) {
    return std::vector<Var>{derivative_times_g(c.input(0), c.outputs[0], c.grad())};
  });
}

// A binary rule: the two gradients at the broadcast shape, then summed to each input's shape.
template <class F> void binary_rule(const char* name, F grads_at_output_shape) {
  GradRegistrar(name, [grads_at_output_shape](const GradContext& c) {
    const Var &a = c.input(0), &b = c.input(1);
    std::pair<Var, Var> g = grads_at_output_shape(a, b, c.outputs[0], c.grad());
    return std::vector<Var>{g.first.valid() ? sum_to_shape(broadcast_to_shape(g.first, c.grad().type().shape), a.type().shape) : Var{},
                            g.second.valid() ? sum_to_shape(broadcast_to_shape(g.second, c.grad().type().shape), b.type().shape) : Var{}};
  });
}

Var zeros_like(const Var& v) { return zeros_of(v.type()); }
Var greater(const Var& a, const Var& b) { return binary("Greater", a, b); }
Var less(const Var& a, const Var& b) { return binary("Less", a, b); }
Var equal(const Var& a, const Var& b) { return binary("Equal", a, b); }

// Gradient share of the first operand of maximum (or minimum): 1 where it wins, 1/2 on ties.
Var winner_share(const Var& a, const Var& b, bool maximum) {
  const Var wins = as_dtype_of(maximum ? greater(a, b) : less(a, b), a);
  const Var ties = as_dtype_of(equal(a, b), a);
  return add(wins, scale(ties, 0.5));
}

struct Rules {
  Rules() {
    unary_rule("Identity", [](const Var&, const Var&, const Var& g) { return g; });
    unary_rule("Neg", [](const Var&, const Var&, const Var& g) { return neg(g); });
    unary_rule("Abs", [](const Var& x, const Var&, const Var& g) { return mul(g, unary("Sign", x)); });
    unary_rule("Square", [](const Var& x, const Var&, const Var& g) { return mul(g, scale(x, 2)); });
    unary_rule("Sqrt", [](const Var&, const Var& y, const Var& g) { return div(scale(g, 0.5), y); });
    unary_rule("Rsqrt", [](const Var&, const Var& y, const Var& g) {
      return mul(scale(g, -0.5), mul(y, mul(y, y)));
    });
    unary_rule("Reciprocal", [](const Var&, const Var& y, const Var& g) { return neg(mul(g, mul(y, y))); });
    unary_rule("Exp", [](const Var&, const Var& y, const Var& g) { return mul(g, y); });
    unary_rule("Expm1", [](const Var&, const Var& y, const Var& g) { return mul(g, add(y, scalar_like(y, 1))); });
    unary_rule("Exp2", [](const Var&, const Var& y, const Var& g) { return mul(g, scale(y, std::log(2.0))); });
    unary_rule("Log", [](const Var& x, const Var&, const Var& g) { return div(g, x); });
    unary_rule("Log1p", [](const Var& x, const Var&, const Var& g) { return div(g, add(x, scalar_like(x, 1))); });
    unary_rule("Log2", [](const Var& x, const Var&, const Var& g) { return div(g, scale(x, std::log(2.0))); });
    unary_rule("Log10", [](const Var& x, const Var&, const Var& g) { return div(g, scale(x, std::log(10.0))); });
    unary_rule("Sin", [](const Var& x, const Var&, const Var& g) { return mul(g, unary("Cos", x)); });
    unary_rule("Cos", [](const Var& x, const Var&, const Var& g) { return neg(mul(g, unary("Sin", x))); });
    unary_rule("Tan", [](const Var&, const Var& y, const Var& g) {
      return mul(g, add(scalar_like(y, 1), mul(y, y)));
    });
    unary_rule("Asin", [](const Var& x, const Var&, const Var& g) {
      return mul(g, unary("Rsqrt", sub(scalar_like(x, 1), mul(x, x))));
    });
    unary_rule("Acos", [](const Var& x, const Var&, const Var& g) {
      return neg(mul(g, unary("Rsqrt", sub(scalar_like(x, 1), mul(x, x)))));
    });
    unary_rule("Atan", [](const Var& x, const Var&, const Var& g) {
      return div(g, add(scalar_like(x, 1), mul(x, x)));
    });
    unary_rule("Sinh", [](const Var& x, const Var&, const Var& g) { return mul(g, unary("Cosh", x)); });
    unary_rule("Cosh", [](const Var& x, const Var&, const Var& g) { return mul(g, unary("Sinh", x)); });
    unary_rule("Tanh", [](const Var&, const Var& y, const Var& g) {
      return mul(g, sub(scalar_like(y, 1), mul(y, y)));
    });
    unary_rule("Asinh", [](const Var& x, const Var&, const Var& g) {
      return mul(g, unary("Rsqrt", add(mul(x, x), scalar_like(x, 1))));
    });
    unary_rule("Acosh", [](const Var& x, const Var&, const Var& g) {
      return mul(g, unary("Rsqrt", sub(mul(x, x), scalar_like(x, 1))));
    });
    unary_rule("Atanh", [](const Var& x, const Var&, const Var& g) {
      return div(g, sub(scalar_like(x, 1), mul(x, x)));
    });
    for (const char* flat : {"Floor", "Ceil", "Round", "Trunc", "Sign", "StopGradient"}) {
      unary_rule(flat, [](const Var& x, const Var&, const Var&) { return zeros_like(x); });
    }
    unary_rule("Erf", [](const Var& x, const Var&, const Var& g) {
      return mul(scale(g, 2 / std::sqrt(kPi)), unary("Exp", neg(mul(x, x))));
    });
    unary_rule("Erfc", [](const Var& x, const Var&, const Var& g) {
      return mul(scale(g, -2 / std::sqrt(kPi)), unary("Exp", neg(mul(x, x))));
    });
    unary_rule("Sigmoid", [](const Var&, const Var& y, const Var& g) {
      return mul(g, mul(y, sub(scalar_like(y, 1), y)));
    });
    unary_rule("Relu", [](const Var& x, const Var&, const Var& g) {
      return mul(g, as_dtype_of(greater(x, scalar_like(x, 0)), x));
    });
    unary_rule("Relu6", [](const Var& x, const Var&, const Var& g) {
      const Var inside = binary("LogicalAnd", greater(x, scalar_like(x, 0)), less(x, scalar_like(x, 6)));
      return mul(g, as_dtype_of(inside, x));
    });
    unary_rule("Gelu", [](const Var& x, const Var&, const Var& g) {
      // d/dx x * Phi(x) = Phi(x) + x * phi(x)
      const Var cdf = scale(add(scalar_like(x, 1), unary("Erf", scale(x, 1 / std::sqrt(2.0)))), 0.5);
      const Var pdf = scale(unary("Exp", scale(mul(x, x), -0.5)), 1 / std::sqrt(2 * kPi));
      return mul(g, add(cdf, mul(x, pdf)));
    });
    unary_rule("GeluTanh", [](const Var& x, const Var&, const Var& g) {
      const double c = std::sqrt(2 / kPi), k = 0.044715;
      const Var x2 = mul(x, x);
      const Var t = unary("Tanh", scale(mul(x, add(scalar_like(x, 1), scale(x2, k))), c));
      const Var dt = mul(sub(scalar_like(x, 1), mul(t, t)), scale(add(scalar_like(x, 1), scale(x2, 3 * k)), c));
      return mul(g, scale(add(add(scalar_like(x, 1), t), mul(x, dt)), 0.5));
    });
    unary_rule("Softplus", [](const Var& x, const Var&, const Var& g) { return mul(g, unary("Sigmoid", x)); });
    unary_rule("Softsign", [](const Var& x, const Var&, const Var& g) {
      const Var d = add(scalar_like(x, 1), unary("Abs", x));
      return div(g, mul(d, d));
    });
    unary_rule("Selu", [](const Var& x, const Var& y, const Var& g) {
      const double alpha = 1.6732632423543772848170429916717, lambda = 1.0507009873554804934193349852946;
      const Var positive = greater(x, scalar_like(x, 0));
      return mul(g, where(positive, scalar_like(x, lambda), add(y, scalar_like(y, lambda * alpha))));
    });
    unary_rule("Cbrt", [](const Var&, const Var& y, const Var& g) { return div(g, scale(mul(y, y), 3)); });

    binary_rule("Add", [](const Var&, const Var&, const Var&, const Var& g) { return std::make_pair(g, g); });
    binary_rule("Sub", [](const Var&, const Var&, const Var&, const Var& g) { return std::make_pair(g, neg(g)); });
    binary_rule("Mul", [](const Var& a, const Var& b, const Var&, const Var& g) {
      return std::make_pair(mul(g, b), mul(g, a));
    });
    binary_rule("Div", [](const Var&, const Var& b, const Var& y, const Var& g) {
      const Var ga = div(g, b);
      return std::make_pair(ga, neg(mul(ga, y)));
    });
    binary_rule("Pow", [](const Var& a, const Var& b, const Var& y, const Var& g) {
      // d/da = b * a^(b-1); d/db = y * log(a), taken as 0 where a <= 0 (as PyTorch does at a == 0).
      const Var ga = mul(g, mul(b, binary("Pow", a, sub(b, scalar_like(b, 1)))));
      const Var positive = greater(a, scalar_like(a, 0));
      const Var log_a = unary("Log", where(positive, a, scalar_like(a, 1)));
      return std::make_pair(ga, mul(g, mul(y, log_a)));
    });
    for (bool maximum : {true, false}) {
      for (const char* name : maximum ? std::vector<const char*>{"Maximum", "Fmax"} : std::vector<const char*>{"Minimum", "Fmin"}) {
        binary_rule(name, [maximum](const Var& a, const Var& b, const Var&, const Var& g) {
          return std::make_pair(mul(g, winner_share(a, b, maximum)), mul(g, winner_share(b, a, maximum)));
        });
      }
    }
    binary_rule("SquaredDifference", [](const Var& a, const Var& b, const Var&, const Var& g) {
      const Var d = mul(g, scale(sub(a, b), 2));
      return std::make_pair(d, neg(d));
    });
    binary_rule("Atan2", [](const Var& a, const Var& b, const Var&, const Var& g) {
      const Var r2 = add(mul(a, a), mul(b, b));
      return std::make_pair(div(mul(g, b), r2), neg(div(mul(g, a), r2)));
    });
    binary_rule("Hypot", [](const Var& a, const Var& b, const Var& y, const Var& g) {
      return std::make_pair(mul(g, div(a, y)), mul(g, div(b, y)));
    });
    binary_rule("Mod", [](const Var& a, const Var& b, const Var&, const Var& g) {
      return std::make_pair(g, neg(mul(g, unary("Floor", div(a, b)))));
    });
    binary_rule("Fmod", [](const Var& a, const Var& b, const Var&, const Var& g) {
      return std::make_pair(g, neg(mul(g, unary("Trunc", div(a, b)))));
    });
    binary_rule("FloorDiv", [](const Var& a, const Var& b, const Var&, const Var&) {
      return std::make_pair(zeros_like(a), zeros_like(b));
    });

    // copysign(a, b) = |a| with b's sign: a's gradient flips where the signs differ.
    binary_rule("CopySign", [](const Var& a, const Var& b, const Var&, const Var& g) {
      const Var flip = binary("LogicalXor", unary("Signbit", a), unary("Signbit", b));
      return std::make_pair(where(flip, neg(g), g), zeros_like(b));
    });

    GradRegistrar("Where", [](const GradContext& c) {
      const Var& cond = c.input(0);
      const Var& g = c.grad();
      const Var zero = scalar_like(g, 0);
      return std::vector<Var>{Var{}, sum_to_shape(where(cond, g, zero), c.input(1).type().shape),
                              sum_to_shape(where(cond, zero, g), c.input(2).type().shape)};
    });
    GradRegistrar("Cast", [](const GradContext& c) {
      const Var& x = c.input(0);
      if (!is_float(x.type().dtype)) return std::vector<Var>{Var{}};
      return std::vector<Var>{cast(c.grad(), x.type().dtype)};
    });
  }
};
Rules rules;

}  // namespace

}  // namespace mnnpy
