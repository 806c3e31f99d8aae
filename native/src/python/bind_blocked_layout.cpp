// The blocked channel layout's block, for the Python front-end (mnnpy/_expr_layout.py) and the
// model loader, which builds blocked graphs only for backends that prefer this block.
#include <string>

#include "mnnpy/backend.h"
#include "ops/blocked_layout.h"
#include "python/bindings.h"

namespace mnnpy {

namespace {

int backend_channel_block(const std::string& name) {
  const Backend* backend = find_backend(name);
  if (!backend) throw ValueError("backend_channel_block: '" + name + "' is not one of usable_backends()");
  return backend->capabilities().channel_block;
}

}  // namespace

MNNPY_REGISTER_BINDING([](py::module_& m) {
  m.attr("CHANNEL_BLOCK") = kChannelBlock;
  m.def("backend_channel_block", &backend_channel_block, py::arg("name"),
        "The channel block the convolution layouts of backend `name` (one of usable_backends()) prefer; "
        "graphs use the blocked layout (block CHANNEL_BLOCK) where it is that.");
});

}  // namespace mnnpy
