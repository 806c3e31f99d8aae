// Connected components of binary images, labelled in OpenCV's order: by each component's first
// pixel in raster order for 4-connectivity, and by its first 2x2 block in block-raster order for
// 8-connectivity (the order OpenCV's block-based labelling creates them in).
#pragma once
#include <cstdint>

namespace mnnpy {
namespace cpu {
namespace cv_components {

// labels[p] = 0 for background (src[p] == 0), else 1 + the component's index; returns the
// number of labels including the background.
int64_t label(const uint8_t* src, int64_t rows, int64_t cols, int connectivity, int32_t* labels);

// Per label l < count: stats[l] = {left, top, width, height, area}, centroids[l] = {x, y}.
void statistics(const int32_t* labels, int64_t rows, int64_t cols, int64_t count, int32_t* stats, double* centroids);

}  // namespace cv_components
}  // namespace cpu
}  // namespace mnnpy
