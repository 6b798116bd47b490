// Checks of the benchmark timer's budget rule (lib/attnlab/lab/timing.hpp): which runs it times, not how
// fast anything is (speed is make bench's business, never a timed test's).
#include <doctest/doctest.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "attnlab/lab/timing.hpp"

using namespace attnlab;

TEST_CASE("time_within_budget: a short first run is the warm-up, then at most max_runs timed runs") {
  std::vector<std::string> events;
  const BudgetedTiming t = time_within_budget([&] { events.push_back("run"); }, 4, 1.0,
                                              [&] { events.push_back("check"); });
  // The first run (microseconds) leaves room for 1 s / its seconds runs: clamped to 4.
  CHECK(events == std::vector<std::string>{"run", "check", "run", "run", "run", "run"});
  CHECK(t.runs == 4);
  CHECK(t.warmed_up);
  CHECK(t.median_s >= 0);
  CHECK(t.median_s < 1.0);
  CHECK(t.user_s >= 0);
  CHECK(t.sys_s >= 0);
  CHECK(t.minor_faults >= 0);
}

TEST_CASE("time_within_budget: a first run longer than the budget is the only run, timed, not a warm-up") {
  int calls = 0, checks = 0;
  const BudgetedTiming t = time_within_budget(
      [&] {
        ++calls;
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
      },
      5, 0.01, [&] { ++checks; });
  CHECK(calls == 1);
  CHECK(checks == 1);
  CHECK(t.runs == 1);
  CHECK_FALSE(t.warmed_up);
  CHECK(t.median_s >= 0.03);  // sleep_for sleeps at least as long as asked
}

TEST_CASE("time_within_budget: runs after the warm-up fill the budget, at least one") {
  int calls = 0;
  // A 20 ms first run under a 50 ms budget: room for 2 more (1 if this machine stalled the first run past 25 ms).
  const BudgetedTiming t = time_within_budget(
      [&] {
        ++calls;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      },
      5, 0.05);
  CHECK(t.warmed_up);
  CHECK(t.runs >= 1);
  CHECK(t.runs <= 2);
  CHECK(calls == 1 + t.runs);
  CHECK(t.median_s >= 0.02);
}

TEST_CASE("time_within_budget: bad arguments are refused before anything runs") {
  int calls = 0;
  const auto work = [&] { ++calls; };
  CHECK_THROWS_AS(time_within_budget(work, 0, 1.0), std::invalid_argument);
  CHECK_THROWS_AS(time_within_budget(work, 3, 0.0), std::invalid_argument);
  CHECK_THROWS_AS(time_within_budget(work, 3, -1.0), std::invalid_argument);
  CHECK(calls == 0);
}
