// Which vector instruction set this build was compiled for: with the build id (build_id.hpp), what decides
// the bits of a float result. Eigen's packet width and its fused multiply-adds change the order and the
// rounding of sums, so the same source and seed give byte-identical tables on every machine whose build
// has the same vector ISA, and tables that may differ in their last digits (with the same verdicts)
// between ISAs. Shard stamps and the run record (results/RUNS.md) carry it; slurm/compare_runs.py reads it.
#pragma once

namespace attnlab {

// The level, from the macros the compiler defined for this translation unit (every object of the build
// is compiled with the same flags, CMakeLists.txt's attnlab_flags):
//   "avx512"    AVX-512F (-march=native on such a CPU)
//   "avx2"      AVX2 and FMA, no AVX-512
//   "avx"       AVX without AVX2 or FMA
//   "sse4.2"    SSE4.2 without AVX
//   "portable"  baseline x86-64, SSE2 only (-DATTNLAB_NATIVE=OFF)
//   "aarch64", "unknown" elsewhere.
const char* build_isa();

// Eigen's own list of the instruction sets it vectorizes with (Eigen::SimdInstructionSetsInUse()),
// e.g. "AVX512, FMA, AVX2, AVX SSE, SSE2, SSE3, SSSE3, SSE4.1, SSE4.2".
const char* eigen_simd();

}  // namespace attnlab
