// Host library: runs on host memory after the inputs were synchronized to the host.
// Border following (Suzuki-Abe) on binary and label images, giving the contours, their order and
// their hierarchy as OpenCV's findContours gives them.
#pragma once
#include <cstdint>
#include <vector>

namespace mnnpy {
namespace host {
namespace cv_contours {

// OpenCV's RETR_* and CHAIN_APPROX_* values.
enum Retrieval { kExternal = 0, kList = 1, kConnectedComponents = 2, kTree = 3, kFloodFill = 4 };
enum Approximation { kApproxNone = 1, kApproxSimple = 2, kApproxTC89L1 = 3, kApproxTC89KCos = 4 };

struct ContourList {
  std::vector<int32_t> points;     // x, y of every contour's points, contour after contour
  std::vector<int64_t> starts;     // contour i owns points [starts[i], starts[i + 1]) (in points)
  std::vector<int32_t> hierarchy;  // per contour: next, previous, first child, parent (-1: none)
  int64_t count() const { return (int64_t)starts.size() - 1; }
};

// Contours of the nonzero pixels of a rows x cols uint8 image (rows `stride` bytes apart); the
// points are shifted by (offset_x, offset_y). `mode` is one of kExternal ... kTree.
ContourList find_contours(const uint8_t* src, int64_t rows, int64_t cols, int64_t stride, int mode, int method,
                          int offset_x, int offset_y);

// Contours of every region of equal labels of an int32 image (RETR_FLOODFILL): the image frame
// counts as label 0.
ContourList find_label_contours(const int32_t* src, int64_t rows, int64_t cols, int64_t stride, int method,
                                int offset_x, int offset_y);

}  // namespace cv_contours
}  // namespace host
}  // namespace mnnpy
