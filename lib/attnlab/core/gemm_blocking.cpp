// The pinned GEMM blocking (gemm_blocking.hpp), set before main() in every program.
#include "attnlab/core/gemm_blocking.hpp"

#include <Eigen/Core>

namespace attnlab {

void pin_gemm_blocking() { Eigen::setCpuCacheSizes(kPinnedL1CacheBytes, kPinnedL2CacheBytes, kPinnedL3CacheBytes); }

bool gemm_blocking_pinned() {
  return Eigen::l1CacheSize() == kPinnedL1CacheBytes && Eigen::l2CacheSize() == kPinnedL2CacheBytes &&
         Eigen::l3CacheSize() == kPinnedL3CacheBytes;
}

}  // namespace attnlab

// Static initialisation: runs before main() in every program that links the core layer (the linker is told
// to keep this object, CMakeLists.txt). No product runs at static-initialisation time in attnlab, so none
// runs unpinned.
extern "C" {
int attnlab_gemm_blocking_pinned = (attnlab::pin_gemm_blocking(), 1);
}
