// Runs independent trials in parallel (OpenMP) and returns their results in trial order.
#pragma once

#include <cstddef>
#include <exception>
#include <string>
#include <vector>

#include "attnlab/lab/progress.hpp"

namespace attnlab {

// Calls fn(i) for i = 0 .. count-1 with `#pragma omp parallel for schedule(dynamic)`. An exception
// must not leave an OpenMP region (the program would terminate), so each is caught and the one of
// the lowest index is rethrown once all trials have ended. Each trial should seed its own Rng with
// derive_seed(seed, i) and write only its own slot, so results do not depend on the thread count.
template <typename Fn>
void parallel_trials(std::size_t count, Fn fn) {
  std::vector<std::exception_ptr> errors(count);
  const auto n = static_cast<std::ptrdiff_t>(count);
#pragma omp parallel for schedule(dynamic)
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    try {
      fn(static_cast<std::size_t>(i));
    } catch (...) {
      errors[static_cast<std::size_t>(i)] = std::current_exception();
    }
  }
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// results[i] = trial(i) for i < count, in parallel as above, with a progress line on a
// terminal. The returned vector is the same for any thread count.
template <typename Result, typename Trial>
std::vector<Result> run_trials(std::size_t count, const std::string& label, Trial trial) {
  std::vector<Result> results(count);
  Progress progress(label, count);
  parallel_trials(count, [&](std::size_t i) {
    results[i] = trial(i);
    progress.tick();
  });
  return results;
}

}  // namespace attnlab
