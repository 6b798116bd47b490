// The doctest runner for every property check in verify/: validates ATTNLAB_TEST_SEED and
// ATTNLAB_TEST_REPEAT before any check runs (a bad value: one line, exit 2), prints the seeds after each
// failed test case, and exits 77, which ctest reports as a skip, when every test case that ran was
// skipped (support.hpp, skip_test).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "support.hpp"

#include <iostream>
#include <string>

namespace {

// Counts the test cases that ran (filtered-out ones never start), and after each failed one prints the
// seeds it drew from (support.hpp, seeds_in_effect).
int g_started = 0;

struct RunListener : doctest::IReporter {
  explicit RunListener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData& tc) override {
    ++g_started;
    file_ = tc.m_file.c_str();
  }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats& st) override {
    if (st.numAssertsFailedCurrentTest > 0 || st.failure_flags != 0)
      std::cout << attnlab::testing::seeds_in_effect(file_) << std::endl;
  }
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}

 private:
  std::string file_;
};

REGISTER_LISTENER("attnlab_run_listener", 1, RunListener);

}  // namespace

int main(int argc, char** argv) {
  const attnlab::testing::TestEnvironment& env = attnlab::testing::test_environment();  // exits 2 on a bad value
  if (env.seed) std::cout << "ATTNLAB_TEST_SEED=" << *env.seed << ": the base seed of every seeded check\n";
  if (env.repeat) std::cout << "ATTNLAB_TEST_REPEAT=" << *env.repeat << ": the repeat count of every repeated loop\n";
  doctest::Context context(argc, argv);
  const int status = context.run();
  if (context.shouldExit()) return status;
  const int skipped = attnlab::testing::skipped_test_count();
  if (status == 0 && skipped > 0 && skipped == g_started) return 77;
  return status;
}
