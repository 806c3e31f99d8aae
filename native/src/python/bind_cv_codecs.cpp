// Header reading and encoding for mnnpy.cv's codecs: cv_image_probe tells the front-end what
// CvImageDecode will produce; cv_image_encode is imencode's (eager) encoder.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <tuple>

#include "host/cv_codecs.h"
#include "mnnpy/tensor.h"
#include "python/bindings.h"

namespace mnnpy {

namespace {

namespace codecs = host::cv_codecs;

py::object probe(py::array_t<uint8_t, py::array::c_style | py::array::forcecast> encoded, int flags,
                 std::tuple<int64_t, int64_t, int64_t> max_size) {
  codecs::DecodedLayout layout;
  codecs::SizeLimits limits;
  std::tie(limits.width, limits.height, limits.pixels) = max_size;
  bool ok;
  {
    py::gil_scoped_release release;
    ok = codecs::probe_image(encoded.data(), (size_t)encoded.size(), flags, limits, &layout);
  }
  if (!ok) return py::none();
  return py::make_tuple((int)layout.format, layout.height, layout.width, layout.channels, layout.sample_bytes,
                        layout.reduced_by, layout.orientation);
}

py::array_t<uint8_t> encode(const std::string& extension, py::array image, const std::vector<int>& params) {
  if (!(image.flags() & py::array::c_style)) throw ValueError("cv_image_encode: the image must be C-contiguous");
  const int itemsize = (int)image.itemsize();
  if (itemsize != 1 && itemsize != 2) throw ValueError("cv_image_encode: samples must be 8 or 16 bits");
  if (image.ndim() != 2 && image.ndim() != 3) throw ValueError("cv_image_encode: the image must be HxW or HxWxC");
  const codecs::Format format = codecs::writer_for_extension(extension);
  if (format == codecs::Format::Unknown) throw ValueError("cv_image_encode: no writer for '" + extension + "'");
  codecs::ImageView view;
  view.data = static_cast<const uint8_t*>(image.data());
  view.height = image.shape(0);
  view.width = image.shape(1);
  view.channels = image.ndim() == 3 ? (int)image.shape(2) : 1;
  view.sample_bytes = itemsize;
  view.row_stride = view.width * view.channels * itemsize;
  std::vector<uint8_t> bytes;
  {
    py::gil_scoped_release release;
    bytes = codecs::encode_image(format, view, params);
  }
  py::array_t<uint8_t> out((py::ssize_t)bytes.size());
  if (!bytes.empty()) std::memcpy(out.mutable_data(), bytes.data(), bytes.size());
  return out;
}

}  // namespace

MNNPY_REGISTER_BINDING([](py::module_& m) {
  m.def("cv_image_probe", &probe, py::arg("encoded"), py::arg("flags"),
        py::arg("max_size") = std::make_tuple(int64_t(1) << 20, int64_t(1) << 20, int64_t(1) << 30),
        "(format, height, width, channels, sample_bytes, reduced_by, orientation) that decoding `encoded` "
        "with IMREAD_* `flags` gives (reduced_by: the IMREAD_REDUCED_* factor the decoder applied; "
        "orientation: the EXIF orientation still to apply), or None when it is no readable image. "
        "ValueError when the header declares an image beyond max_size (width, height, pixels).");
  m.def("cv_image_encode", &encode, py::arg("extension"), py::arg("image"), py::arg("params"),
        "The file bytes of a C-contiguous 8/16-bit BGR(A) image in the format of `extension` "
        "(lower case, no dot), with OpenCV's IMWRITE_* (id, value) parameters.");
});

}  // namespace mnnpy
