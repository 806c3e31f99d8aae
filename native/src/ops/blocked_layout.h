// The blocked channel layout [N, C/8, H, W, 8] that convolution chains run in: the ops that take or
// give it (the layout conversions, blocked convolutions and poolings) are defined over this block.
#pragma once
#include <cstdint>

namespace mnnpy {

// Channels per block of the blocked layout.
constexpr int64_t kChannelBlock = 8;

}  // namespace mnnpy
