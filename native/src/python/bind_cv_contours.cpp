// Contours and shape analysis for mnnpy.cv, run at call time on NumPy arrays: findContours' result
// has a size that depends on the pixels, and the shape functions return a few numbers.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <string>
#include <vector>

#include "host/cv_contours.h"
#include "host/cv_shapes.h"
#include "mnnpy/tensor.h"
#include "python/bindings.h"

namespace mnnpy {

namespace {

namespace contours = host::cv_contours;
namespace shapes = host::cv_shapes;

// Rows of pixels must be contiguous (rows themselves may be strided).
void check_image(const py::array& image, size_t itemsize) {
  if (image.ndim() != 2) throw ValueError("cv_find_contours: the image must be 2-D");
  if ((size_t)image.itemsize() != itemsize || image.strides(1) != (py::ssize_t)itemsize ||
      image.strides(0) % (py::ssize_t)itemsize != 0 || image.strides(0) < image.shape(1) * (py::ssize_t)itemsize) {
    throw ValueError("cv_find_contours: the image rows must be contiguous");
  }
}

py::tuple contours_to_python(const contours::ContourList& found) {
  const int64_t n = found.count();
  if (n == 0) return py::make_tuple(py::tuple(), py::none());
  py::tuple list((size_t)n);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t count = found.starts[i + 1] - found.starts[i];
    py::array_t<int32_t> pts({(py::ssize_t)count, (py::ssize_t)1, (py::ssize_t)2});
    std::memcpy(pts.mutable_data(), found.points.data() + 2 * found.starts[i], (size_t)count * 2 * sizeof(int32_t));
    list[(size_t)i] = std::move(pts);
  }
  py::array_t<int32_t> hierarchy({(py::ssize_t)1, (py::ssize_t)n, (py::ssize_t)4});
  std::memcpy(hierarchy.mutable_data(), found.hierarchy.data(), (size_t)n * 4 * sizeof(int32_t));
  return py::make_tuple(list, hierarchy);
}

py::tuple find_contours(py::array image, int mode, int method, int offset_x, int offset_y) {
  if (method < contours::kApproxNone || method > contours::kApproxTC89KCos) {
    throw ValueError("cv_find_contours: bad method");
  }
  contours::ContourList found;
  if (py::isinstance<py::array_t<int32_t>>(image)) {
    check_image(image, 4);
    const int32_t* data = static_cast<const int32_t*>(image.data());
    const int64_t rows = image.shape(0), cols = image.shape(1), stride = image.strides(0) / 4;
    py::gil_scoped_release release;
    found = contours::find_label_contours(data, rows, cols, stride, method, offset_x, offset_y);
  } else {
    check_image(image, 1);
    const uint8_t* data = static_cast<const uint8_t*>(image.data());
    const int64_t rows = image.shape(0), cols = image.shape(1), stride = image.strides(0);
    if (mode < contours::kExternal || mode > contours::kTree) throw ValueError("cv_find_contours: bad mode");
    py::gil_scoped_release release;
    found = contours::find_contours(data, rows, cols, stride, mode, method, offset_x, offset_y);
  }
  return contours_to_python(found);
}

// Points come as C-contiguous Nx2 int32 or float32 arrays (the front-end reshapes them).
struct PointArray {
  const int32_t* ints = nullptr;
  const float* floats = nullptr;
  int64_t n = 0;
};

PointArray point_array(const py::array& points, const char* func) {
  if (points.ndim() != 2 || points.shape(1) != 2 || !(points.flags() & py::array::c_style)) {
    throw ValueError(std::string(func) + ": points must be a C-contiguous Nx2 array");
  }
  PointArray p;
  p.n = points.shape(0);
  if (py::isinstance<py::array_t<int32_t>>(points)) {
    p.ints = static_cast<const int32_t*>(points.data());
  } else if (py::isinstance<py::array_t<float>>(points)) {
    p.floats = static_cast<const float*>(points.data());
  } else {
    throw ValueError(std::string(func) + ": points must be int32 or float32");
  }
  return p;
}

py::array_t<int32_t> convex_hull(py::array points, bool clockwise, bool indices) {
  const PointArray p = point_array(points, "cv_convex_hull");
  std::vector<int32_t> hull;
  {
    py::gil_scoped_release release;
    hull = p.ints ? shapes::convex_hull(p.ints, p.n, clockwise, indices)
                  : shapes::convex_hull(p.floats, p.n, clockwise, indices);
  }
  py::array_t<int32_t> out((py::ssize_t)hull.size());
  if (!hull.empty()) std::memcpy(out.mutable_data(), hull.data(), hull.size() * sizeof(int32_t));
  return out;
}

py::tuple min_area_rect(py::array points) {
  const PointArray p = point_array(points, "cv_min_area_rect");
  float r[5];
  {
    py::gil_scoped_release release;
    if (p.ints) shapes::min_area_rect(p.ints, p.n, r); else shapes::min_area_rect(p.floats, p.n, r);
  }
  return py::make_tuple(r[0], r[1], r[2], r[3], r[4]);
}

template <typename T>
py::array_t<T> as_curve(const std::vector<T>& xy) {
  py::array_t<T> out({(py::ssize_t)(xy.size() / 2), (py::ssize_t)1, (py::ssize_t)2});
  if (!xy.empty()) std::memcpy(out.mutable_data(), xy.data(), xy.size() * sizeof(T));
  return out;
}

py::array approx_poly_dp(py::array points, double epsilon, bool closed) {
  const PointArray p = point_array(points, "cv_approx_poly_dp");
  if (p.ints) {
    std::vector<int32_t> kept;
    {
      py::gil_scoped_release release;
      kept = shapes::approx_poly_dp(p.ints, p.n, epsilon, closed);
    }
    return as_curve(kept);
  }
  std::vector<float> kept;
  {
    py::gil_scoped_release release;
    kept = shapes::approx_poly_dp(p.floats, p.n, epsilon, closed);
  }
  return as_curve(kept);
}

std::vector<double> contour_moments(py::array points) {
  const PointArray p = point_array(points, "cv_contour_moments");
  std::vector<double> m(24);
  py::gil_scoped_release release;
  if (p.ints) shapes::contour_moments(p.ints, p.n, m.data()); else shapes::contour_moments(p.floats, p.n, m.data());
  return m;
}

std::vector<double> image_moments(py::array image, bool binary) {
  if (image.ndim() != 2) throw ValueError("cv_image_moments: the image must be 2-D");
  int depth;
  const char kind = image.dtype().kind();
  const auto itemsize = image.itemsize();
  if (kind == 'u' && itemsize == 1) depth = 0;
  else if (kind == 'i' && itemsize == 2) depth = 3;
  else if (kind == 'f' && itemsize == 4) depth = 5;
  else if (kind == 'f' && itemsize == 8) depth = 6;
  else throw ValueError("cv_image_moments: unsupported dtype");
  if (image.strides(1) != itemsize || image.strides(0) % itemsize != 0) {
    throw ValueError("cv_image_moments: the image rows must be contiguous");
  }
  std::vector<double> m(24);
  const void* data = image.data();
  const int64_t rows = image.shape(0), cols = image.shape(1), stride = image.strides(0) / itemsize;
  py::gil_scoped_release release;
  shapes::image_moments(data, depth, rows, cols, stride, binary, m.data());
  return m;
}

double point_polygon_test(py::array points, float x, float y, bool measure_dist) {
  const PointArray p = point_array(points, "cv_point_polygon_test");
  py::gil_scoped_release release;
  return p.ints ? shapes::point_polygon_test(p.ints, p.n, x, y, measure_dist)
                : shapes::point_polygon_test(p.floats, p.n, x, y, measure_dist);
}

bool is_contour_convex(py::array points) {
  const PointArray p = point_array(points, "cv_is_contour_convex");
  return p.ints ? shapes::is_contour_convex(p.ints, p.n) : shapes::is_contour_convex(p.floats, p.n);
}

py::tuple mask_bounding_rect(py::array image) {
  check_image(image, 1);
  int32_t r[4];
  const uint8_t* data = static_cast<const uint8_t*>(image.data());
  const int64_t rows = image.shape(0), cols = image.shape(1), stride = image.strides(0);
  {
    py::gil_scoped_release release;
    shapes::mask_bounding_rect(data, rows, cols, stride, r);
  }
  return py::make_tuple(r[0], r[1], r[2], r[3]);
}

}  // namespace

MNNPY_REGISTER_BINDING([](py::module_& m) {
  m.def("cv_find_contours", &find_contours, py::arg("image"), py::arg("mode"), py::arg("method"),
        py::arg("offset_x") = 0, py::arg("offset_y") = 0,
        "OpenCV's findContours of a 2-D uint8 image (nonzero = foreground; modes RETR_EXTERNAL..RETR_TREE) or int32 "
        "label image (RETR_FLOODFILL): (tuple of Nx1x2 int32 contours, 1xNx4 int32 hierarchy or None).");
  m.def("cv_convex_hull", &convex_hull, py::arg("points"), py::arg("clockwise"), py::arg("indices"),
        "Indices (int32) of the convex hull of Nx2 int32/float32 points, in OpenCV's order.");
  m.def("cv_min_area_rect", &min_area_rect, py::arg("points"),
        "OpenCV's minAreaRect of Nx2 int32/float32 points: (cx, cy, width, height, angle).");
  m.def("cv_approx_poly_dp", &approx_poly_dp, py::arg("points"), py::arg("epsilon"), py::arg("closed"),
        "OpenCV's approxPolyDP of Nx2 int32/float32 points: Mx1x2 points of the same dtype.");
  m.def("cv_contour_moments", &contour_moments, py::arg("points"),
        "The 24 moments (m.., mu.., nu..) of the polygon of Nx2 int32/float32 points.");
  m.def("cv_image_moments", &image_moments, py::arg("image"), py::arg("binary"),
        "The 24 moments (m.., mu.., nu..) of a 2-D uint8/int16/float32/float64 image.");
  m.def("cv_point_polygon_test", &point_polygon_test, py::arg("points"), py::arg("x"), py::arg("y"),
        py::arg("measure_dist"), "OpenCV's pointPolygonTest of (x, y) against Nx2 int32/float32 points.");
  m.def("cv_is_contour_convex", &is_contour_convex, py::arg("points"),
        "OpenCV's isContourConvex of Nx2 int32/float32 points.");
  m.def("cv_mask_bounding_rect", &mask_bounding_rect, py::arg("image"),
        "(x, y, width, height) bounding the nonzero pixels of a 2-D uint8 image.");
});

}  // namespace mnnpy
