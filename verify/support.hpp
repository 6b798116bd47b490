// Helpers shared by the checks: scratch directories, running executables, ratio checks that print
// the ratio, seed and repeat overrides from the environment, and a skip that reaches ctest.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "attnlab/core/rng.hpp"

namespace attnlab::testing {

// A fresh directory under the system temp dir, removed with everything in it on destruction.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  // Names of the regular files in the directory (hidden ones included), sorted.
  std::vector<std::string> files() const;

 private:
  std::filesystem::path path_;
};

struct RunResult {
  int exit_status = -1;  // -1 when killed by a signal
  std::string output;    // stdout and stderr together
};

// Runs bin/<name> with `args` (no shell), capturing its output.
RunResult run_binary(const std::string& name, const std::vector<std::string>& args);

// One gzip member (RFC 1952) of `raw`, as gzip -9 writes it: the checks' compressed files.
std::vector<std::uint8_t> gzip(const std::vector<std::uint8_t>& raw);

// AddressSanitizer reserves terabytes of address space for its shadow memory when a program starts, so no
// sanitized program can start under an address-space cap (prlimit --as): `make test-sanitize` skips the
// cases that need one (doctest counts them as skipped, not passed); every other build runs them.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

std::string read_text(const std::filesystem::path& path);

// ---- Ratio checks ----------------------------------------------------------------------------------
// A unitless scaled ratio (LAPACK's ||r|| / (n ||A|| eps), a finite-difference ratio) judged against its
// threshold in one direction: lt passes when ratio < threshold, le when <=, gt when >, ge when >=.
// A NaN ratio (or threshold) fails every direction.
enum class RatioBound { lt, le, gt, ge };

struct RatioJudgement {
  double ratio;
  double threshold;
  RatioBound bound;
  std::string what;
  bool holds() const;
};

// "what: ratio 41.2 > threshold 30" (the relation that holds between the two numbers), or
// "what: ratio nan is not a number (threshold 30)".
std::ostream& operator<<(std::ostream& os, const RatioJudgement& j);

// ---- Seed and repeat overrides (in the manner of Eigen's EIGEN_SEED and EIGEN_REPEAT) --------------
// ATTNLAB_TEST_SEED: the base seed of every check that draws random inputs (a decimal integer in
// [0, 2^64 - 1]); unset, each check keeps its own default. ATTNLAB_TEST_REPEAT: how many random
// repeats each repeated loop runs (a decimal integer in [1, 1000000]); unset, each keeps its own count.
struct TestEnvironment {
  std::optional<std::uint64_t> seed;
  std::optional<int> repeat;
};

// Parses the two variables' values (nullptr: unset). Throws std::invalid_argument with one line naming
// the variable and its bad value.
TestEnvironment parse_test_environment(const char* seed, const char* repeat);

// The process's environment, read and validated once (the first call). On a bad value: the one line on
// stderr and exit status 2 (the runner's main() calls this before any check runs).
const TestEnvironment& test_environment();

// ATTNLAB_TEST_SEED when set, else `default_seed` (the seed the check has always used). Records the
// seed under the calling file's name, for seeds_in_effect().
std::uint64_t test_seed(std::uint64_t default_seed, std::source_location where = std::source_location::current());
// ATTNLAB_TEST_REPEAT when set, else `default_repeat` (the count the loop has always run).
int test_repeat(int default_repeat);

// ---- Sizes (Eigen's habit: fixed edge sizes, then random ones) ---------------------------------------
// The closed range random sizes are drawn from.
struct SizeRange {
  Eigen::Index lo, hi;
};
// The sizes a check runs at, the one generator of them: `edges` in order (1, 2, 3 unless a kernel has edges
// of its own, such as a tile's), then test_repeat(repeat) sizes drawn uniformly from `random` with rng.
std::vector<Eigen::Index> test_sizes(Rng& rng, SizeRange random, int repeat = 2,
                                     const std::vector<Eigen::Index>& edges = {1, 2, 3});

// One line for a failed test case in `file` (a path; its file name is compared): the base seeds it drew
// from, and how to rerun with them. The runner prints it after every failed test case.
std::string seeds_in_effect(std::string_view file);

// ---- Skips that reach ctest -------------------------------------------------------------------------
// Marks the running test case as skipped (a prerequisite such as PyTorch is missing) and prints why.
// The caller returns from the test case. The runner exits 77 (ctest's SKIP_RETURN_CODE, so ctest reports
// "Not Run") when every test case it ran was skipped and nothing failed.
void skip_test(std::string_view reason);
// The number of test cases skip_test() marked.
int skipped_test_count();

}  // namespace attnlab::testing

// ATTNLAB_CHECK_RATIO_LE(ratio, threshold, what) and its lt/gt/ge and REQUIRE forms: the doctest
// assertion `ratio <= threshold`, printing "what: ratio 41.2 > threshold 30" when it fails.
#define ATTNLAB_RATIO_ASSERT_(ASSERT, BOUND, ratio, threshold, what)                                            \
  do {                                                                                                         \
    const ::attnlab::testing::RatioJudgement attnlab_ratio_{static_cast<double>(ratio),                        \
                                                            static_cast<double>(threshold),                    \
                                                            ::attnlab::testing::RatioBound::BOUND, (what)};    \
    DOCTEST_INFO(attnlab_ratio_);                                                                              \
    ASSERT(attnlab_ratio_.holds());                                                                            \
  } while (false)
#define ATTNLAB_CHECK_RATIO_LT(ratio, threshold, what) ATTNLAB_RATIO_ASSERT_(DOCTEST_CHECK, lt, ratio, threshold, what)
#define ATTNLAB_CHECK_RATIO_LE(ratio, threshold, what) ATTNLAB_RATIO_ASSERT_(DOCTEST_CHECK, le, ratio, threshold, what)
#define ATTNLAB_CHECK_RATIO_GT(ratio, threshold, what) ATTNLAB_RATIO_ASSERT_(DOCTEST_CHECK, gt, ratio, threshold, what)
#define ATTNLAB_CHECK_RATIO_GE(ratio, threshold, what) ATTNLAB_RATIO_ASSERT_(DOCTEST_CHECK, ge, ratio, threshold, what)
#define ATTNLAB_REQUIRE_RATIO_LT(ratio, threshold, what) ATTNLAB_RATIO_ASSERT_(DOCTEST_REQUIRE, lt, ratio, threshold, what)
#define ATTNLAB_REQUIRE_RATIO_LE(ratio, threshold, what) ATTNLAB_RATIO_ASSERT_(DOCTEST_REQUIRE, le, ratio, threshold, what)
