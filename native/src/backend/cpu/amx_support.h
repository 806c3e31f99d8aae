// Detection of Intel AMX (Advanced Matrix Extensions) for the kernels that use its tiles
// (gemm_bf16.cpp, gemm_int8_amx.cpp): the CPUID bits, the OS-enabled state in XCR0, and Linux's
// per-process permission for the tile data.
#pragma once
#include <cstdint>

namespace mnnpy {
namespace cpu {

// XCR0, the state components the OS saves (XGETBV 0); 0 where the instruction is unavailable.
// Call only after CPUID reported OSXSAVE.
uint64_t read_xcr0();

// Linux enables the AMX tile data state per process on request; a kernel that refuses (or
// predates AMX) leaves TILEDATA faulting, so AMX is used only after a granted request. The grant
// covers every thread of the process.
bool request_amx_permission();

struct AmxFeatures {
  bool bf16 = false;  // AMX-TILE and AMX-BF16 (TDPBF16PS) usable
  bool int8 = false;  // AMX-TILE and AMX-INT8 (TDPBUSD and kin) usable
};
// What this process can run: the CPU has the instructions, the OS enabled the tile state in XCR0,
// and the permission was granted. Detected once per process.
const AmxFeatures& amx_features();

// The tile configuration of LDTILECFG (palette 1): per tile, bytes per row and rows.
struct alignas(64) AmxTileConfig {
  uint8_t palette_id = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(AmxTileConfig) == 64, "the tile configuration is 64 bytes");

}  // namespace cpu
}  // namespace mnnpy
