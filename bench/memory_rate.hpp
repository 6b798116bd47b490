// The machine's memory bandwidth, the second ceiling of the benchmarks' roofline (bench_attention): a
// kernel that moves B bytes to do F flops cannot beat min(GEMM rate, F / B x bandwidth). Measured in the
// same run as the GEMM rate, so the two ceilings and the kernels share the machine's state.
#pragma once

#include <fmt/format.h>

#include <Eigen/Core>
#include <cstdio>
#include <stdexcept>

#include "attnlab/core/matrix.hpp"
#include "attnlab/lab/timing.hpp"

namespace attnlab::bench {

// STREAM's triad a = b + s c over float arrays of `length` elements (each far larger than the caches),
// `threads` threads with a fixed static split, median of `repeats` runs after a warm-up that also touches
// every page. Counted as STREAM counts it: 3 x 4 bytes per element (read b and c, write a; the write-allocate
// read of a is not counted). Returns GB/s (1e9 bytes per second).
inline double triad_bandwidth(Eigen::Index length, int threads, int repeats) {
  Vec<float> a = Vec<float>::Zero(length), b = Vec<float>::Constant(length, 1.0f), c = Vec<float>::Constant(length, 2.0f);
  const float s = 3.0f;
  const Eigen::Index chunks = threads;
  const double seconds = median_seconds(
      [&] {
#pragma omp parallel for schedule(static) num_threads(threads)
        for (Eigen::Index t = 0; t < chunks; ++t) {
          const Eigen::Index lo = t * length / chunks, hi = (t + 1) * length / chunks;
          a.segment(lo, hi - lo) = b.segment(lo, hi - lo) + s * c.segment(lo, hi - lo);
        }
      },
      repeats);
  keep_alive(a);
  // The triad's result is known exactly: every element 1 + 3 x 2 = 7 (a wrong split would leave zeros).
  if (a.minCoeff() != 7.0f || a.maxCoeff() != 7.0f) throw std::runtime_error("triad_bandwidth: the triad computed a wrong result");
  return 3.0 * 4.0 * static_cast<double>(length) / seconds * 1e-9;
}

// The bandwidth every benchmark row is set against: 3 arrays of 32 Mi floats (128 MiB each; --quick: 4 Mi),
// median of 7 runs (quick: 3), printed to stderr.
inline double memory_ceiling(bool quick, int threads) {
  const double gbs = triad_bandwidth(quick ? (Eigen::Index{1} << 22) : (Eigen::Index{1} << 25), threads, quick ? 3 : 7);
  fmt::print(stderr, "memory bandwidth (STREAM triad) with {} threads: {:.1f} GB/s\n", threads, gbs);
  return gbs;
}

}  // namespace attnlab::bench
