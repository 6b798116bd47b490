// Eigen's GEMM blocking, pinned: the same cache sizes on every machine, so that products sum in the same
// order wherever they run.
//
// Eigen cuts a product's inner dimension into panels of kc columns, kc chosen from the L1 size it queries
// from the CPU at run time (GeneralBlockPanelKernel.h, evaluateProductBlockingSizesHeuristic), and the
// panels' partial sums are added in that order. Two machines of one instruction set that report different
// caches (virtual machines of one kind do) therefore round differently: the ViT's weight gradients, whose
// inner dimension is a chunk's 8 x 196 token rows, differed in the 10th digit after one training step.
// gemm_blocking.cpp sets the sizes below from a static initialiser, before main(), in every program that
// links the core layer (CMakeLists.txt forces that object into every link: no executable, test or bench
// can forget it); verify/test_gemm_blocking.cpp checks that two very different host sizes give the same
// bits once pinned, and different bits without the pin.
#pragma once

#include <cstddef>

namespace attnlab {

// The sizes Eigen plans with, in bytes: a 32 KiB L1 data cache and a 1 MiB L2 per core (AMD Zen 2-4 and
// Intel Skylake-SP and later report these or more), and 32 MiB of L3 (used only by Eigen's own multithreaded
// products). Smaller than a cache the machine really has costs a little speed, never a wrong result.
inline constexpr std::ptrdiff_t kPinnedL1CacheBytes = 32 * 1024;
inline constexpr std::ptrdiff_t kPinnedL2CacheBytes = 1024 * 1024;
inline constexpr std::ptrdiff_t kPinnedL3CacheBytes = 32 * 1024 * 1024;

// Sets Eigen's cache sizes to the pinned ones (Eigen::setCpuCacheSizes). Already done before main(); call it
// again only after code that changed them (the check does, to play another host).
void pin_gemm_blocking();

// Whether Eigen's cache sizes are the pinned ones now.
bool gemm_blocking_pinned();

}  // namespace attnlab

// The symbol CMakeLists.txt names in every link (-Wl,--undefined=...), so that the linker takes
// gemm_blocking.cpp's object, and its static initialiser, out of the core library into every program.
extern "C" int attnlab_gemm_blocking_pinned;
