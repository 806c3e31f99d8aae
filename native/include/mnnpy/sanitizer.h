// AddressSanitizer marks for the core's own pools: blocks of tensors kept for reuse, the
// executor's arena and per-thread scratch are handed out again and again, rounded up, from memory
// ASan sees as one live allocation. In builds with ASan (MNNPY_SANITIZE=address) the bytes a
// kernel was not given are marked unaddressable, so that ASan reports reads and writes past a
// buffer's end, or into a dead one, as it does for malloc'd blocks. Other builds compile no code.
#pragma once
#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define MNNPY_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MNNPY_ADDRESS_SANITIZER 1
#endif
#endif

#ifdef MNNPY_ADDRESS_SANITIZER
#include <sanitizer/asan_interface.h>
#endif

namespace mnnpy {

#ifdef MNNPY_ADDRESS_SANITIZER
constexpr bool kAddressSanitizer = true;
inline void poison_bytes(const void* p, size_t n) { __asan_poison_memory_region(p, n); }
inline void unpoison_bytes(const void* p, size_t n) { __asan_unpoison_memory_region(p, n); }
#else
constexpr bool kAddressSanitizer = false;
inline void poison_bytes(const void*, size_t) {}
inline void unpoison_bytes(const void*, size_t) {}
#endif

// A block of `reserved` bytes of which the first `used` may be touched.
inline void limit_access(const void* p, size_t used, size_t reserved) {
  if (!kAddressSanitizer || !p) return;
  poison_bytes(p, reserved);
  unpoison_bytes(p, used);
}

}  // namespace mnnpy
