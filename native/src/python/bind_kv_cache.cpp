// The key/value caches of mnnpy.llm (mnnpy/kv_cache.h): made and released by a model, named by
// the handle its CachedAttention nodes carry.
#include "mnnpy/kv_cache.h"
#include "python/bindings.h"

namespace mnnpy {

MNNPY_REGISTER_BINDING([](py::module_& m) {
  m.def("kv_cache_create", &kv_cache_create, py::arg("layers"), py::arg("kv_heads"), py::arg("head_dim"),
        "A new key/value cache; returns its handle.");
  m.def("kv_cache_release", &kv_cache_release, py::arg("handle"), "Frees a key/value cache.");
  m.def("kv_cache_reserve", &kv_cache_reserve, py::arg("handle"), py::arg("tokens"), py::arg("keep"),
        "Makes room for `tokens` tokens, keeping the first `keep`; a device's cache must have room before a run.");
  m.def("kv_cache_bytes", &kv_cache_bytes, py::arg("handle"), "Bytes the cache's buffers take now.");
});

}  // namespace mnnpy
