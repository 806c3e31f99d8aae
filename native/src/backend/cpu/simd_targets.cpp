#include "mnnpy/simd_target.h"

#include <hwy/highway.h>
#include <hwy/targets.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <mutex>

#include "mnnpy/tensor.h"

namespace mnnpy {

namespace {

// What the CPU supports, read before any target is forced (forcing changes SupportedTargets()).
int64_t cpu_targets() {
  static const int64_t bits = hwy::SupportedTargets() & HWY_TARGETS;
  return bits;
}

std::atomic<int64_t> g_forced{0};  // 0: the best usable target
std::mutex g_set_mutex;

std::vector<std::string> names_of(int64_t bits) {
  std::vector<std::string> out;
  for (; bits != 0; bits &= bits - 1) out.push_back(hwy::TargetName(bits & -bits));  // lowest bit = best
  return out;
}

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return (char)std::toupper(c); });
  return s;
}

}  // namespace

std::vector<std::string> compiled_simd_targets() { return names_of(HWY_TARGETS); }
std::vector<std::string> usable_simd_targets() { return names_of(cpu_targets()); }

std::string simd_target() {
  const int64_t forced = g_forced.load();
  const int64_t bits = forced ? forced : cpu_targets();
  return hwy::TargetName(bits & -bits);
}

int64_t simd_target_id() {
  const int64_t forced = g_forced.load();
  return forced ? forced : 0;
}

void set_simd_target(const std::string& name) {
  const std::string want = upper(name);
  int64_t bits = 0;
  if (want == "PORTABLE") {
    bits = HWY_STATIC_TARGET;
  } else if (want != "BEST" && !want.empty()) {
    for (int64_t t = cpu_targets(); t != 0; t &= t - 1) {
      if (upper(hwy::TargetName(t & -t)) == want) bits = t & -t;
    }
    if (!bits) {
      std::string usable, compiled;
      for (auto& n : usable_simd_targets()) usable += (usable.empty() ? "" : ", ") + n;
      const bool is_compiled = [&] {
        for (auto& n : compiled_simd_targets()) if (upper(n) == want) return true;
        return false;
      }();
      throw ValueError("SIMD target '" + name + "' " +
                       (is_compiled ? "is not supported by this CPU" : "is not a target mnnpy was built for") +
                       " (usable here: " + usable + ", or 'best' / 'portable')");
    }
  }
  std::lock_guard<std::mutex> lock(g_set_mutex);
  cpu_targets();  // read the CPU's targets before the first mask is set
  // The best usable target is what Highway picks unforced; forcing it is the same as no mask.
  if (bits == (cpu_targets() & -cpu_targets())) bits = 0;
  hwy::SetSupportedTargetsForTest(bits);
  g_forced.store(bits);
}

}  // namespace mnnpy
