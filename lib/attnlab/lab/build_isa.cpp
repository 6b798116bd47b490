// The vector instruction set of this build, from the compiler's macros.
#include "attnlab/lab/build_isa.hpp"

#include <Eigen/Core>

namespace attnlab {

const char* build_isa() {
#if defined(__AVX512F__)
  return "avx512";
#elif defined(__AVX2__) && defined(__FMA__)
  return "avx2";
#elif defined(__AVX__)
  return "avx";
#elif defined(__SSE4_2__)
  return "sse4.2";
#elif defined(__x86_64__)
  return "portable";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "unknown";
#endif
}

const char* eigen_simd() { return Eigen::SimdInstructionSetsInUse(); }

}  // namespace attnlab
