// The machine's single-precision GEMM rate, the ceiling the benchmarks compare their kernels with
// (bench_attention, bench_vit). Needs OpenBLAS's cblas.h and library (CMakeLists.txt links them into
// each benchmark that includes this header); the library's kernels use Eigen only.
#pragma once

#include <cblas.h>

#include <fmt/format.h>

#include <Eigen/Core>
#include <cstdio>
#include <utility>

#include "attnlab/core/matrix.hpp"
#include "attnlab/core/rng.hpp"
#include "attnlab/lab/timing.hpp"

namespace attnlab::bench {

// The GEMM rate (GFLOP/s) of an s x s x s float product with `threads` threads, median of `repeats` runs
// after a warm-up, by Eigen (its own OpenMP blocking) and by OpenBLAS. Leaves Eigen single-threaded
// (the kernels parallelise across heads, blocks and chunks themselves).
inline std::pair<double, double> gemm_rates(Eigen::Index s, int threads, int repeats, Rng& rng) {
  const Mat<float> a = gaussian_matrix<float>(s, s, rng), b = gaussian_matrix<float>(s, s, rng);
  Mat<float> c(s, s);
  const double flops = 2.0 * static_cast<double>(s) * static_cast<double>(s) * static_cast<double>(s);
  Eigen::setNbThreads(threads);
  const double eigen_s = median_seconds([&] { c.noalias() = a * b; }, repeats);
  Eigen::setNbThreads(1);
  openblas_set_num_threads(threads);
  const int si = static_cast<int>(s);
  const double blas_s = median_seconds(
      [&] {
        cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, si, si, si, 1.0f, a.data(), si, b.data(), si, 0.0f,
                    c.data(), si);
      },
      repeats);
  keep_alive(c);
  return {flops / eigen_s * 1e-9, flops / blas_s * 1e-9};
}

// The ceiling every benchmark row is set against: gemm_rates at 2048 (256 with --quick), median of 7
// (3), printed to stderr. Both benchmarks measure it the same way, so their shares are comparable.
inline std::pair<double, double> gemm_ceiling(bool quick, int threads, Rng& rng) {
  const auto rates = gemm_rates(quick ? 256 : 2048, threads, quick ? 3 : 7, rng);
  fmt::print(stderr, "sgemm with {} threads: Eigen {:.1f} GFLOP/s, OpenBLAS {:.1f} GFLOP/s\n", threads, rates.first,
             rates.second);
  return rates;
}

}  // namespace attnlab::bench
