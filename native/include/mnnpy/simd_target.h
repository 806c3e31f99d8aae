// The SIMD instruction set the CPU kernels run on: every kernel is compiled for each target and
// one is chosen at run time (the best the CPU has, or one named by MNNPY_SIMD /
// mnnpy.set_simd_target for testing and comparison).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mnnpy {

std::vector<std::string> compiled_simd_targets();  // best first
std::vector<std::string> usable_simd_targets();    // compiled and supported by this CPU, best first
std::string simd_target();                         // the one kernels run on now
// Runs every kernel on `name` (one of usable_simd_targets(), case-insensitive), "portable" (the
// target that needs no SIMD extension) or "best"; ValueError naming the choices otherwise.
void set_simd_target(const std::string& name);
// Identifies the active target; plans are built for one target and keyed by it.
int64_t simd_target_id();

}  // namespace mnnpy
