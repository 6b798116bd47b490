// Checks of the checks' own helpers (support.hpp): the ratio check, the seed and repeat overrides and
// the skip that reaches ctest, each also run in a child runner to see it fail, exit 2 or exit 77.
#include <doctest/doctest.h>

#include "support.hpp"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

using attnlab::testing::parse_test_environment;
using attnlab::testing::RatioBound;
using attnlab::testing::RatioJudgement;
using attnlab::testing::run_binary;

namespace {

std::string text_of(const RatioJudgement& j) {
  std::ostringstream s;
  s << j;
  return s.str();
}

// Sets an environment variable for the children started in its lifetime, then restores it (the runner
// itself read its environment once, at start).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("ratio judgement: each direction at, below and above the threshold; NaN fails all four") {
  const auto holds = [](double r, RatioBound b, double t) { return RatioJudgement{r, t, b, "x"}.holds(); };
  CHECK(holds(29.9, RatioBound::lt, 30));
  CHECK_FALSE(holds(30, RatioBound::lt, 30));
  CHECK(holds(30, RatioBound::le, 30));
  CHECK_FALSE(holds(30.1, RatioBound::le, 30));
  CHECK(holds(30.1, RatioBound::gt, 30));
  CHECK_FALSE(holds(30, RatioBound::gt, 30));
  CHECK(holds(30, RatioBound::ge, 30));
  CHECK_FALSE(holds(29.9, RatioBound::ge, 30));
  CHECK_FALSE(holds(kInf, RatioBound::le, 30));
  CHECK(holds(kInf, RatioBound::gt, 30));
  for (RatioBound b : {RatioBound::lt, RatioBound::le, RatioBound::gt, RatioBound::ge}) {
    CHECK_FALSE(holds(kNaN, b, 30));
    CHECK_FALSE(holds(1, b, kNaN));
  }
}

TEST_CASE("ratio judgement: the message names the quantity, the ratio and the threshold") {
  CHECK(text_of({41.2, 30, RatioBound::le, "eigen residual"}) == "eigen residual: ratio 41.2 > threshold 30");
  CHECK(text_of({3.5e-7, 1e-6, RatioBound::lt, "dW"}) == "dW: ratio 3.5e-07 < threshold 1e-06");
  CHECK(text_of({30, 30, RatioBound::lt, "r"}) == "r: ratio 30 == threshold 30");
  CHECK(text_of({kNaN, 30, RatioBound::le, "r"}) == "r: ratio nan is not a number (threshold 30)");
}

TEST_CASE("ratio checks pass through doctest when they hold") {
  ATTNLAB_CHECK_RATIO_LT(1.0, 30, "lt");
  ATTNLAB_CHECK_RATIO_LE(30.0, 30, "le");
  ATTNLAB_CHECK_RATIO_GT(31.0f, 30, "gt");  // a float ratio compares as its double value
  ATTNLAB_CHECK_RATIO_GE(30, 30.0, "ge");
  ATTNLAB_REQUIRE_RATIO_LT(0.0, 1e-6, "require lt");
  ATTNLAB_REQUIRE_RATIO_LE(1e-6, 1e-6, "require le");
}

// Run only by the child below (skipped in every ordinary run): three ratio checks that must fail.
TEST_CASE("support self-test: failing ratio checks" * doctest::skip()) {
  ATTNLAB_CHECK_RATIO_LE(41.2, 30, "planted residual");
  ATTNLAB_CHECK_RATIO_LT(kNaN, 30, "planted nan");
  ATTNLAB_CHECK_RATIO_GT(1e-9, 1e-6, "planted wrong gradient");
}

TEST_CASE("a failing ratio check fails the run and prints the ratio against its threshold") {
  const auto r = run_binary("verify_attnlab", {"--test-case=support self-test: failing ratio checks", "--no-skip",
                                               "--no-version", "--no-colors"});
  INFO(r.output);
  CHECK(r.exit_status == 1);
  CHECK(r.output.find("planted residual: ratio 41.2 > threshold 30") != std::string::npos);
  CHECK(r.output.find("planted nan: ratio nan is not a number (threshold 30)") != std::string::npos);
  CHECK(r.output.find("planted wrong gradient: ratio 1e-09 < threshold 1e-06") != std::string::npos);
  CHECK(r.output.find("3 failed") != std::string::npos);
}

TEST_CASE("ATTNLAB_TEST_SEED and ATTNLAB_TEST_REPEAT: parsed as decimal integers in range") {
  CHECK_FALSE(parse_test_environment(nullptr, nullptr).seed.has_value());
  CHECK_FALSE(parse_test_environment(nullptr, nullptr).repeat.has_value());
  CHECK(parse_test_environment("0", nullptr).seed == 0u);
  CHECK(parse_test_environment("18446744073709551615", nullptr).seed == std::numeric_limits<std::uint64_t>::max());
  CHECK(parse_test_environment("20251122", "1").seed == 20251122u);
  CHECK(parse_test_environment(nullptr, "1000000").repeat == 1000000);
  for (const char* bad : {"", "abc", "-1", "+5", " 5", "5 ", "1e3", "0x10", "18446744073709551616"}) {
    INFO("seed '" << bad << "'");
    CHECK_THROWS_WITH_AS(parse_test_environment(bad, nullptr),
                         ("ATTNLAB_TEST_SEED='" + std::string(bad) +
                          "' is not a seed: expected a decimal integer in [0, 18446744073709551615]").c_str(),
                         std::invalid_argument);
  }
  for (const char* bad : {"", "0", "-3", "1000001", "2.5", "ten", "99999999999999999999"}) {
    INFO("repeat '" << bad << "'");
    CHECK_THROWS_WITH_AS(parse_test_environment(nullptr, bad),
                         ("ATTNLAB_TEST_REPEAT='" + std::string(bad) +
                          "' is not a repeat count: expected a decimal integer in [1, 1000000]").c_str(),
                         std::invalid_argument);
  }
}

TEST_CASE("a bad ATTNLAB_TEST_SEED or ATTNLAB_TEST_REPEAT: one line and exit status 2 before any check runs") {
  const std::vector<std::string> args{"--test-case=ratio judgement*", "--no-version"};
  {
    ScopedEnv env("ATTNLAB_TEST_SEED", "12x");
    const auto r = run_binary("verify_attnlab", args);
    CHECK(r.exit_status == 2);
    CHECK(r.output == "ATTNLAB_TEST_SEED='12x' is not a seed: expected a decimal integer in [0, 18446744073709551615]\n");
  }
  {
    ScopedEnv env("ATTNLAB_TEST_REPEAT", "0");
    const auto r = run_binary("verify_attnlab", args);
    CHECK(r.exit_status == 2);
    CHECK(r.output == "ATTNLAB_TEST_REPEAT='0' is not a repeat count: expected a decimal integer in [1, 1000000]\n");
  }
  {
    ScopedEnv seed("ATTNLAB_TEST_SEED", "7");
    ScopedEnv repeat("ATTNLAB_TEST_REPEAT", "3");
    const auto r = run_binary("verify_attnlab", args);
    INFO(r.output);
    CHECK(r.exit_status == 0);
    CHECK(r.output.find("ATTNLAB_TEST_SEED=7: the base seed of every seeded check") != std::string::npos);
    CHECK(r.output.find("ATTNLAB_TEST_REPEAT=3: the repeat count of every repeated loop") != std::string::npos);
  }
}

// Run only by the child below: a test case that skips itself.
TEST_CASE("support self-test: a skipped test case" * doctest::skip()) {
  attnlab::testing::skip_test("support self-test: the prerequisite is missing");
}

TEST_CASE("skip_test: the runner exits 77 when every test case it ran was skipped, and not otherwise") {
  const auto only = run_binary("verify_attnlab", {"--test-case=support self-test: a skipped test case", "--no-skip",
                                                  "--no-version"});
  INFO(only.output);
  CHECK(only.exit_status == 77);
  CHECK(only.output.find("SKIPPED: support self-test: the prerequisite is missing") != std::string::npos);
  const auto with_other = run_binary(
      "verify_attnlab", {"--test-case=support self-test: a skipped test case,ratio judgement: each direction*",
                         "--no-skip", "--no-version"});
  INFO(with_other.output);
  CHECK(with_other.exit_status == 0);
  const auto failing = run_binary(
      "verify_attnlab", {"--test-case=support self-test: a skipped test case,support self-test: failing ratio checks",
                         "--no-skip", "--no-version"});
  CHECK(failing.exit_status == 1);
}
