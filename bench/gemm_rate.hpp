// The machine's single-precision GEMM rate, the ceiling the benchmarks compare their kernels with
// (bench_attention, bench_vit). Needs OpenBLAS's cblas.h at compile time and the path of its library in
// ATTNLAB_OPENBLAS_LIBRARY (CMakeLists.txt sets both for each benchmark that includes this header); the
// library's kernels use Eigen only.
#pragma once

#include <cblas.h>
#include <dlfcn.h>

#include <fmt/format.h>

#include <Eigen/Core>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>

#include "attnlab/core/matrix.hpp"
#include "attnlab/core/rng.hpp"
#include "attnlab/lab/timing.hpp"

namespace attnlab::bench {

// OpenBLAS, opened the first time a rate is measured rather than linked. Why: Debian's OpenBLAS (the
// pthread build) starts its worker threads as soon as it is loaded, and they busy-wait (a sched_yield
// loop) for 2^28 cycles, 0.1 s here, after loading and after every call before they sleep. On two cores
// that takes a core from the OpenMP threads of whatever runs next: in 3 of 6 quick runs Eigen's sgemm,
// measured right after start-up, ran at 2-4 GFLOP/s instead of 130, and the memory bandwidth measured
// right after OpenBLAS's sgemm at 6 GB/s instead of 28. So the threads are told to sleep at once
// (OPENBLAS_THREAD_TIMEOUT=4, OpenBLAS's shortest wait, 2^4 cycles; it is read when the library loads, so
// it is set here, overriding the caller's), and the kernels' own processes (bench_attention's children)
// never load OpenBLAS at all.
struct OpenBlas {
  decltype(&cblas_sgemm) sgemm;
  decltype(&openblas_set_num_threads) set_num_threads;
};

inline const OpenBlas& openblas() {
  static const OpenBlas lib = [] {
    ::setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1);
    void* handle = ::dlopen(ATTNLAB_OPENBLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) throw std::runtime_error(std::string("cannot open OpenBLAS: ") + ::dlerror());
    OpenBlas found{reinterpret_cast<decltype(&cblas_sgemm)>(::dlsym(handle, "cblas_sgemm")),
                   reinterpret_cast<decltype(&openblas_set_num_threads)>(::dlsym(handle, "openblas_set_num_threads"))};
    if (found.sgemm == nullptr || found.set_num_threads == nullptr)
      throw std::runtime_error(std::string(ATTNLAB_OPENBLAS_LIBRARY) + " lacks cblas_sgemm or openblas_set_num_threads");
    return found;
  }();
  return lib;
}

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
  const OpenBlas& blas = openblas();
  blas.set_num_threads(threads);
  const int si = static_cast<int>(s);
  const double blas_s = median_seconds(
      [&] {
        blas.sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, si, si, si, 1.0f, a.data(), si, b.data(), si, 0.0f,
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
