#include "ops/block_sparse_settings.h"

#include <mutex>

namespace mnnpy {

namespace {
std::mutex settings_mutex;
BlockSparseSettings settings;
}  // namespace

BlockSparseSettings block_sparse_settings() {
  std::lock_guard<std::mutex> lock(settings_mutex);
  return settings;
}

void set_block_sparse_settings(const BlockSparseSettings& s) {
  std::lock_guard<std::mutex> lock(settings_mutex);
  settings = s;
}

}  // namespace mnnpy
