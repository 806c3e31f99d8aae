// The window geometry of 2-D pooling (ops/pool.cpp) that every backend's kernels share: the
// geometry of one pooling, the same with the taps outside the input for every output trimmed, and
// the per-row and per-column window tables (valid tap ranges, average divisors) built from it.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace mnnpy {

struct PoolGeometry {
  int64_t planes = 0;  // N * C, or N * C/8 for the blocked layout
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
};

namespace pool_detail {

inline int64_t ceil_div(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

// The taps k in [0, kernel) of a window starting at `start` whose position start + k * dilation
// lies in [lo, hi): [first, last), empty when first == last. Closed form, so that windows far
// larger than the input (a model may ask for any kernel_shape) cost nothing to describe.
inline std::pair<int64_t, int64_t> taps_inside(int64_t start, int64_t kernel, int64_t dilation, int64_t lo,
                                               int64_t hi) {
  const int64_t first = std::min(kernel, std::max<int64_t>(0, ceil_div(lo - start, dilation)));
  const int64_t last = std::min(kernel, std::max<int64_t>(0, ceil_div(hi - start, dilation)));
  return {first, std::max(first, last)};
}

// For each output position along one axis, the range [first, last) of kernel taps inside [0, in).
inline void valid_taps(int64_t outs, int64_t in, int64_t stride, int64_t kernel, int64_t dilation, int64_t pad_begin,
                       std::vector<int32_t>& first_taps, std::vector<int32_t>& last_taps) {
  first_taps.resize(outs);
  last_taps.resize(outs);
  for (int64_t o = 0; o < outs; ++o) {
    const auto [first, last] = taps_inside(o * stride - pad_begin, kernel, dilation, 0, in);
    first_taps[o] = (int32_t)first;
    last_taps[o] = (int32_t)last;
  }
}

// Per output position along one axis, 1 / the number of its taps that count (inside the input, or
// inside the padded input with count_include_pad); 0 where none does.
inline std::vector<float> inverse_counts(int64_t outs, int64_t in, int64_t stride, int64_t kernel, int64_t dilation,
                                         int64_t pad_begin, int64_t pad_end, bool count_include_pad) {
  std::vector<float> inv(outs);
  const int64_t lo = count_include_pad ? -pad_begin : 0, hi = count_include_pad ? in + pad_end : in;
  for (int64_t o = 0; o < outs; ++o) {
    const auto [first, last] = taps_inside(o * stride - pad_begin, kernel, dilation, lo, hi);
    inv[o] = last > first ? (float)(1.0 / (double)(last - first)) : 0.0f;
  }
  return inv;
}

// One axis of trim_padding_taps: drops the leading taps that are before the input for every
// output and the trailing ones past it for every output (at least one tap stays).
inline void trim_axis(int64_t in, int64_t out, int64_t stride, int64_t dilation, int64_t& kernel, int64_t& pad_begin) {
  if (out <= 0) return;
  const int64_t lowest_start = -pad_begin, highest_start = (out - 1) * stride - pad_begin;
  const int64_t leading = std::min(kernel - 1, std::max<int64_t>(0, ceil_div(-highest_start, dilation)));
  const int64_t end = std::min(kernel, std::max<int64_t>(0, ceil_div(in - lowest_start, dilation)));
  kernel = std::max<int64_t>(1, end - leading);
  pad_begin -= leading * dilation;
}

}  // namespace pool_detail

// The same pooling with the taps that fall outside the input for every output removed (a model may
// ask for windows far larger than its input): the geometry kernels run, whatever was asked for.
inline PoolGeometry trim_padding_taps(const PoolGeometry& g) {
  PoolGeometry t = g;
  pool_detail::trim_axis(g.in_h, g.out_h, g.stride_h, g.dilation_h, t.kernel_h, t.pad_top);
  pool_detail::trim_axis(g.in_w, g.out_w, g.stride_w, g.dilation_w, t.kernel_w, t.pad_left);
  return t;
}

// The window tables of one geometry, built once per shape. Both poolings are separable: the valid
// taps of a window form a rectangle, so they are a row range times a column range, and average
// divisors factor into a row count times a column count.
struct PoolWindows {
  // Built from the geometry as asked for; the tap ranges index the kernel of trim_padding_taps(g).
  PoolWindows(const PoolGeometry& counted, bool is_max, bool count_include_pad) {
    using namespace pool_detail;
    // As asked: a window that covers the plane only after trimming may count padding.
    const PoolGeometry& c = counted;
    whole_plane = c.out_h == 1 && c.out_w == 1 && c.kernel_h == c.in_h && c.kernel_w == c.in_w && c.pad_top == 0 &&
                  c.pad_left == 0 && c.dilation_h == 1 && c.dilation_w == 1;
    const PoolGeometry g = trim_padding_taps(counted);
    valid_taps(g.out_h, g.in_h, g.stride_h, g.kernel_h, g.dilation_h, g.pad_top, row_first, row_last);
    valid_taps(g.out_w, g.in_w, g.stride_w, g.kernel_w, g.dilation_w, g.pad_left, col_first, col_last);
    if (!is_max) {
      // Divisors count the taps of the windows as asked for (with count_include_pad, padding counts).
      inv_count_h = inverse_counts(c.out_h, c.in_h, c.stride_h, c.kernel_h, c.dilation_h, c.pad_top, c.pad_bottom,
                                   count_include_pad);
      inv_count_w = inverse_counts(c.out_w, c.in_w, c.stride_w, c.kernel_w, c.dilation_w, c.pad_left, c.pad_right,
                                   count_include_pad);
    }
  }
  // Per output row (column): the range [first, last) of kernel rows (columns) inside the input.
  std::vector<int32_t> row_first, row_last, col_first, col_last;
  // Average pooling: per output row (column) 1 / its share of the divisor (0 where nothing counts).
  std::vector<float> inv_count_h, inv_count_w;
  // One window covering the whole unpadded plane: a plain per-plane reduction.
  bool whole_plane = false;
  size_t bytes() const {
    return (row_first.size() + row_last.size() + col_first.size() + col_last.size()) * sizeof(int32_t) +
           (inv_count_h.size() + inv_count_w.size()) * sizeof(float);
  }
};

}  // namespace mnnpy
