// Python binding of NonMaxSuppression on host arrays (TopK is a graph op, built through _core.op).
#include <cstring>
#include <optional>

#include <pybind11/stl.h>

#include "host/non_max_suppression.h"
#include "python/bindings.h"
#include "python/convert.h"

namespace mnnpy {

namespace {

// The array's dtype and shape; the data must be C-contiguous (the Python wrapper makes it so).
TensorType array_type(const py::array& a, const char* name) {
  if (!(a.flags() & py::array::c_style)) {
    throw ValueError(std::string("non_max_suppression: ") + name + " must be C-contiguous");
  }
  TensorType t;
  t.dtype = dtype_from_python(a.dtype());
  for (py::ssize_t i = 0; i < a.ndim(); ++i) t.shape.push_back((int64_t)a.shape(i));
  return t;
}

py::array_t<int64_t> nms_eager(const py::array& boxes, const py::array& scores, int64_t max_output_boxes_per_class,
                               double iou_threshold, std::optional<double> score_threshold, int64_t center_point_box) {
  if (center_point_box != 0 && center_point_box != 1) {
    throw ValueError("non_max_suppression: center_point_box must be 0 or 1, got " + std::to_string(center_point_box));
  }
  const TensorType boxes_type = array_type(boxes, "boxes"), scores_type = array_type(scores, "scores");
  host::NmsOptions options;
  options.max_output_boxes_per_class = max_output_boxes_per_class;
  options.iou_threshold = (float)iou_threshold;  // ONNX compares in float32
  if (score_threshold) options.score_threshold = (float)*score_threshold;
  options.center_point_box = center_point_box == 1;
  std::vector<int64_t> triples;
  {
    py::gil_scoped_release release;
    triples = host::non_max_suppression(boxes_type, boxes.data(), scores_type, scores.data(), options);
  }
  py::array_t<int64_t> out({(py::ssize_t)(triples.size() / 3), (py::ssize_t)3});
  if (!triples.empty()) std::memcpy(out.mutable_data(), triples.data(), triples.size() * sizeof(int64_t));
  return out;
}

}  // namespace

MNNPY_REGISTER_BINDING([](py::module_& m) {
  m.def("non_max_suppression", &nms_eager, py::arg("boxes"), py::arg("scores"), py::arg("max_output_boxes_per_class"),
        py::arg("iou_threshold"), py::arg("score_threshold") = py::none(), py::arg("center_point_box") = 0,
        "ONNX NonMaxSuppression on NumPy arrays (boxes [B, N, 4], scores [B, C, N], float32, C order): "
        "the selected (batch, class, box) triples as an int64 [M, 3] array.");
});

}  // namespace mnnpy
