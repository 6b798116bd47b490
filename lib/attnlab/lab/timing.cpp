// Wall-clock timing by the median of repeated runs.
#include "attnlab/lab/timing.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <stdexcept>

#include "attnlab/lab/statistics.hpp"

namespace attnlab {

std::vector<double> time_repeats(const std::function<void()>& work, int repeats, bool warm_up) {
  if (repeats < 1) throw std::invalid_argument("time_repeats: repeats must be at least 1");
  if (warm_up) work();
  std::vector<double> seconds;
  seconds.reserve(static_cast<std::size_t>(repeats));
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    work();
    const auto t1 = std::chrono::steady_clock::now();
    seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  return seconds;
}

double median_seconds(const std::function<void()>& work, int repeats, bool warm_up) {
  return median(time_repeats(work, repeats, warm_up));
}

namespace {

struct Usage {
  double user_s = 0, sys_s = 0, minor_faults = 0;
};

Usage usage_now() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  const auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return {secs(r.ru_utime), secs(r.ru_stime), static_cast<double>(r.ru_minflt)};
}

}  // namespace

BudgetedTiming time_within_budget(const std::function<void()>& work, int max_runs, double budget_s,
                                  const std::function<void()>& after_first) {
  if (max_runs < 1) throw std::invalid_argument("time_within_budget: max_runs must be at least 1");
  if (!(budget_s > 0)) throw std::invalid_argument("time_within_budget: the budget must be positive");
  const auto timed = [&](int runs, BudgetedTiming& t) {
    const Usage before = usage_now();
    t.runs = runs;
    t.median_s = median_seconds(work, runs, false);
    const Usage after = usage_now();
    t.user_s = (after.user_s - before.user_s) / runs;
    t.sys_s = (after.sys_s - before.sys_s) / runs;
    t.minor_faults = (after.minor_faults - before.minor_faults) / runs;
  };
  BudgetedTiming first;
  timed(1, first);
  if (after_first) after_first();
  if (first.median_s >= budget_s) {
    first.warmed_up = false;
    return first;
  }
  BudgetedTiming t;
  timed(std::clamp(static_cast<int>(budget_s / std::max(first.median_s, 1e-9)), 1, max_runs), t);
  return t;
}

}  // namespace attnlab
