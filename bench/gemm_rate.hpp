// The machine's single-precision GEMM rate, the ceiling the benchmarks compare their kernels with
// (bench_attention, bench_vit). Needs OpenBLAS's cblas.h at compile time and the path of its library in
// ATTNLAB_OPENBLAS_LIBRARY (CMakeLists.txt sets both for each benchmark that includes this header); the
// library's kernels never use OpenBLAS (Eigen, and attnlab's own block product, linalg/broadcast_gemm).
#pragma once

#include <cblas.h>
#include <dlfcn.h>

#include <fmt/format.h>

#include <Eigen/Core>
#include <algorithm>
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

// The GEMM rate (GFLOP/s) of an s x s x s float product with `threads` threads, by Eigen (its own OpenMP
// blocking) and by OpenBLAS, on operands drawn once and kept, so that a probe can measure again and again
// (bench_attention measures beside every configuration) without paying for new pages each time. Leaves
// Eigen single-threaded (the kernels parallelise across heads, blocks and chunks themselves).
class GemmProbe {
 public:
  GemmProbe(Eigen::Index s, int threads, Rng& rng)
      : a_(gaussian_matrix<float>(s, s, rng)), b_(gaussian_matrix<float>(s, s, rng)), c_(s, s), threads_(threads) {}

  // The two libraries whose sgemm the probe measures.
  enum class Library { eigen, openblas };

  // One library's rate, the median of `repeats` runs (after one untimed warm-up run when warm_up).
  double rate(Library library, int repeats, bool warm_up = true) {
    const Eigen::Index s = a_.rows();
    const double flops = 2.0 * static_cast<double>(s) * static_cast<double>(s) * static_cast<double>(s);
    double seconds = 0;
    if (library == Library::eigen) {
      Eigen::setNbThreads(threads_);
      seconds = median_seconds([&] { c_.noalias() = a_ * b_; }, repeats, warm_up);
      Eigen::setNbThreads(1);
    } else {
      const OpenBlas& blas = openblas();
      blas.set_num_threads(threads_);
      const int si = static_cast<int>(s);
      seconds = median_seconds(
          [&] {
            blas.sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, si, si, si, 1.0f, a_.data(), si, b_.data(), si, 0.0f,
                       c_.data(), si);
          },
          repeats, warm_up);
    }
    keep_alive(c_);
    return flops / seconds * 1e-9;
  }

  // {Eigen, OpenBLAS} rates, each the median of `repeats` runs (after one untimed warm-up run when warm_up).
  std::pair<double, double> rates(int repeats, bool warm_up = true) {
    const double eigen = rate(Library::eigen, repeats, warm_up);
    return {eigen, rate(Library::openblas, repeats, warm_up)};
  }

  int threads() const { return threads_; }

 private:
  Mat<float> a_, b_, c_;
  int threads_;
};

// The probe every benchmark uses: 2048 x 2048 operands (256 with --quick).
inline GemmProbe ceiling_probe(bool quick, int threads, Rng& rng) { return GemmProbe(quick ? 256 : 2048, threads, rng); }

// The ceiling measured in full: median of 7 runs (3 with --quick) after a warm-up, printed to stderr
// (`what` says when). Both benchmarks measure it the same way, so their shares are comparable.
inline std::pair<double, double> full_ceiling(GemmProbe& probe, bool quick, const char* what) {
  const auto rates = probe.rates(quick ? 3 : 7);
  fmt::print(stderr, "sgemm with {} threads{}: Eigen {:.1f} GFLOP/s, OpenBLAS {:.1f} GFLOP/s\n", probe.threads(), what,
             rates.first, rates.second);
  return rates;
}

// The brief measurement between two rows of a benchmark: a warm-up and 3 runs. The warm-up matters: right
// after a bench_attention child exits, 1 of 8 cold measurements here ran at half the rate, none of 8 warm.
inline std::pair<double, double> beside_ceiling(GemmProbe& probe) { return probe.rates(3); }

// The library of the two that a full measurement ({Eigen, OpenBLAS} rates) found faster, and its rate.
inline GemmProbe::Library faster_library(std::pair<double, double> rates) {
  return rates.second >= rates.first ? GemmProbe::Library::openblas : GemmProbe::Library::eigen;
}
inline const char* library_name(GemmProbe::Library library) {
  return library == GemmProbe::Library::eigen ? "eigen" : "openblas";
}
inline double rate_of(std::pair<double, double> rates, GemmProbe::Library library) {
  return library == GemmProbe::Library::eigen ? rates.first : rates.second;
}

// beside_ceiling for one library: bench_attention's measurement between configurations, of the library
// found faster at the start of its run. Why one: the other library's rate never set a row's ceiling (OpenBLAS
// was 1.23x Eigen or more around every one of 101 configurations on 2026-11-27, and in every run before),
// and measuring it too cost 0.45 s per configuration, about 1.4 minutes of a make bench that times most
// configurations twice (kBenchPasses). Both are still measured in full at the start and the end.
inline double beside_rate(GemmProbe& probe, GemmProbe::Library library) { return probe.rate(library, 3); }

// The ceiling of one row, measured side by side with it: `before` and `after` are the {Eigen, OpenBLAS}
// rates measured just before and just after the row. Why both: on a shared machine a neighbour's load comes
// and goes within a run, and one rate measured at the start made every share of a 6-minute run depend on its
// first second. Each library's better rate of the two, the better library's as the row's ceiling: that never
// raises a share above what either measurement gives. tools/bench_report.py flags a row whose two
// measurements (before_best, after_best) differ by more than its threshold: the machine changed under it.
struct RowCeiling {
  double gemm, eigen, openblas, before_best, after_best;
};

inline RowCeiling row_ceiling(std::pair<double, double> before, std::pair<double, double> after) {
  RowCeiling c{};
  c.eigen = std::max(before.first, after.first);
  c.openblas = std::max(before.second, after.second);
  c.gemm = std::max(c.eigen, c.openblas);
  c.before_best = std::max(before.first, before.second);
  c.after_best = std::max(after.first, after.second);
  return c;
}

}  // namespace attnlab::bench
