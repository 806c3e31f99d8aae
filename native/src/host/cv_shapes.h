// Host library: runs on host memory after the inputs were synchronized to the host.
// Shape analysis of point sets and images, with OpenCV's orders and floating-point steps: convex
// hull, minimum-area rectangle, Douglas-Peucker approximation, moments, point-in-polygon test.
// Points are x, y pairs of int32 or float32.
#pragma once
#include <cstdint>
#include <vector>

namespace mnnpy {
namespace host {
namespace cv_shapes {

// Indices of the convex hull's vertices, starting and turning as OpenCV's convexHull; `indices`
// picks among equal points as OpenCV does when it returns indices rather than points.
std::vector<int32_t> convex_hull(const int32_t* points, int64_t n, bool clockwise, bool indices);
std::vector<int32_t> convex_hull(const float* points, int64_t n, bool clockwise, bool indices);

// minAreaRect: {center x, center y, width, height, angle in degrees}.
void min_area_rect(const int32_t* points, int64_t n, float out[5]);
void min_area_rect(const float* points, int64_t n, float out[5]);

// approxPolyDP: the kept points (x, y pairs, same type as the input).
std::vector<int32_t> approx_poly_dp(const int32_t* points, int64_t n, double epsilon, bool closed);
std::vector<float> approx_poly_dp(const float* points, int64_t n, double epsilon, bool closed);

// Moments in OpenCV's order: m00 m10 m01 m20 m11 m02 m30 m21 m12 m03, then mu20 mu11 mu02 mu30
// mu21 mu12 mu03, then nu20 nu11 nu02 nu30 nu21 nu12 nu03 (24 values).
void contour_moments(const int32_t* points, int64_t n, double out[24]);
void contour_moments(const float* points, int64_t n, double out[24]);
// Image moments of a rows x cols one-channel image (`stride` elements between rows); `binary`
// counts nonzero pixels as 1. dtype: 0 uint8, 3 int16, 5 float32, 6 float64 (OpenCV depths).
void image_moments(const void* image, int dtype, int64_t rows, int64_t cols, int64_t stride, bool binary,
                   double out[24]);

double point_polygon_test(const int32_t* points, int64_t n, float x, float y, bool measure_dist);
double point_polygon_test(const float* points, int64_t n, float x, float y, bool measure_dist);

bool is_contour_convex(const int32_t* points, int64_t n);
bool is_contour_convex(const float* points, int64_t n);

// boundingRect of the nonzero pixels of a uint8 image: {x, y, width, height}.
void mask_bounding_rect(const uint8_t* image, int64_t rows, int64_t cols, int64_t stride, int32_t out[4]);

}  // namespace cv_shapes
}  // namespace host
}  // namespace mnnpy
