// AMX detection (backend/cpu/amx_support.h).
#include "backend/cpu/amx_support.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define MNNPY_AMX_X86 1
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#endif

namespace mnnpy {
namespace cpu {

#ifdef MNNPY_AMX_X86
uint64_t read_xcr0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return ((uint64_t)edx << 32) | eax;
}

bool request_amx_permission() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr int kArchGetXcompPerm = 0x1022, kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return false;
  unsigned long granted = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &granted) != 0) return false;
  return (granted >> kXfeatureXtiledata) & 1u;
#else
  return false;
#endif
}

namespace {
AmxFeatures detect_amx() {
  AmxFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return f;  // OSXSAVE: XGETBV usable
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  unsigned eax7, ebx7, ecx7, edx7;
  __cpuid_count(7, 0, eax7, ebx7, ecx7, edx7);
  // AMX-TILE (edx bit 24), with the tile configuration and data state enabled (XCR0 bits 17, 18).
  if (!(edx7 & (1u << 24)) || ((read_xcr0() >> 17) & 3u) != 3u) return f;
  const bool bf16 = edx7 & (1u << 22), int8 = edx7 & (1u << 25);
  if (!(bf16 || int8) || !request_amx_permission()) return f;
  f.bf16 = bf16;
  f.int8 = int8;
  return f;
}
}  // namespace
#else
uint64_t read_xcr0() { return 0; }
bool request_amx_permission() { return false; }
namespace {
AmxFeatures detect_amx() { return {}; }
}  // namespace
#endif

const AmxFeatures& amx_features() {
  static const AmxFeatures features = detect_amx();
  return features;
}

}  // namespace cpu
}  // namespace mnnpy
