// Connected components (see cv_components.h): one raster pass with union-find over provisional
// labels (the smaller label stays the root), then the roots are numbered in OpenCV's order.
#include "backend/cpu/cv_components.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <vector>

namespace mnnpy {
namespace cpu {
namespace cv_components {

namespace {

int32_t find_root(std::vector<int32_t>& parent, int32_t x) {
  int32_t root = x;
  while (parent[root] != root) root = parent[root];
  while (parent[x] != root) {
    const int32_t next = parent[x];
    parent[x] = root;
    x = next;
  }
  return root;
}

int32_t unite(std::vector<int32_t>& parent, int32_t a, int32_t b) {
  a = find_root(parent, a);
  b = find_root(parent, b);
  if (a == b) return a;
  if (a < b) std::swap(a, b);
  parent[a] = b;
  return b;
}

}  // namespace

int64_t label(const uint8_t* src, int64_t rows, int64_t cols, int connectivity, int32_t* labels) {
  // Provisional labels start at 1; parent[0] is the background.
  std::vector<int32_t> parent(1, 0);
  for (int64_t i = 0; i < rows; ++i) {
    const uint8_t* row = src + i * cols;
    int32_t* out = labels + i * cols;
    const int32_t* above = i > 0 ? labels + (i - 1) * cols : nullptr;
    for (int64_t j = 0; j < cols; ++j) {
      if (!row[j]) {
        out[j] = 0;
        continue;
      }
      int32_t found = 0;
      auto join = [&](int32_t neighbour) {
        if (!neighbour) return;
        found = found ? unite(parent, found, neighbour) : find_root(parent, neighbour);
      };
      if (j > 0) join(out[j - 1]);
      if (above) {
        join(above[j]);
        if (connectivity == 8) {
          if (j > 0) join(above[j - 1]);
          if (j + 1 < cols) join(above[j + 1]);
        }
      }
      if (!found) {
        found = (int32_t)parent.size();
        parent.push_back(found);
      }
      out[j] = found;
    }
  }
  // Number the roots in order of each component's first pixel (4-connectivity: the roots' own
  // order) or first 2x2 block (8-connectivity).
  const int32_t provisional = (int32_t)parent.size();
  std::vector<int64_t> first(provisional, std::numeric_limits<int64_t>::max());
  for (int32_t l = 1; l < provisional; ++l) find_root(parent, l);
  const int64_t block_cols = (cols + 1) / 2;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      const int32_t l = labels[i * cols + j];
      if (!l) continue;
      const int32_t root = parent[l];
      const int64_t key = connectivity == 8 ? (i / 2) * block_cols + j / 2 : i * cols + j;
      if (key < first[root]) first[root] = key;
    }
  }
  std::vector<int32_t> roots;
  for (int32_t l = 1; l < provisional; ++l)
    if (parent[l] == l) roots.push_back(l);
  std::stable_sort(roots.begin(), roots.end(), [&](int32_t a, int32_t b) { return first[a] < first[b]; });
  std::vector<int32_t> final_label(provisional, 0);
  for (size_t k = 0; k < roots.size(); ++k) final_label[roots[k]] = (int32_t)k + 1;
  for (int64_t p = 0; p < rows * cols; ++p) labels[p] = labels[p] ? final_label[parent[labels[p]]] : 0;
  return (int64_t)roots.size() + 1;
}

void statistics(const int32_t* labels, int64_t rows, int64_t cols, int64_t count, int32_t* stats, double* centroids) {
  std::vector<int64_t> left(count, cols), top(count, rows), right(count, -1), bottom(count, -1), area(count, 0);
  std::vector<int64_t> sum_x(count, 0), sum_y(count, 0);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      const int32_t l = labels[i * cols + j];
      left[l] = std::min(left[l], j);
      right[l] = std::max(right[l], j);
      top[l] = std::min(top[l], i);
      bottom[l] = std::max(bottom[l], i);
      ++area[l];
      sum_x[l] += j;
      sum_y[l] += i;
    }
  }
  for (int64_t l = 0; l < count; ++l) {
    int32_t* s = stats + l * 5;
    if (area[l] == 0) {
      // A label with no pixels (the background of a full image): OpenCV's values for it.
      s[0] = -1;
      s[1] = std::numeric_limits<int32_t>::max();
      s[2] = s[3] = s[4] = 0;
      centroids[l * 2] = centroids[l * 2 + 1] = std::numeric_limits<double>::quiet_NaN();
      continue;
    }
    s[0] = (int32_t)left[l];
    s[1] = (int32_t)top[l];
    s[2] = (int32_t)(right[l] - left[l] + 1);
    s[3] = (int32_t)(bottom[l] - top[l] + 1);
    s[4] = (int32_t)area[l];
    centroids[l * 2] = (double)sum_x[l] / (double)area[l];
    centroids[l * 2 + 1] = (double)sum_y[l] / (double)area[l];
  }
}

}  // namespace cv_components
}  // namespace cpu
}  // namespace mnnpy
