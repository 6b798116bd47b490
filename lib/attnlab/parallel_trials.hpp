// Runs independent trials in parallel and returns their results in trial order.
#pragma once

#include <exception>
#include <mutex>
#include <string>
#include <vector>

#include "attnlab/progress.hpp"

namespace attnlab {

// results[i] = trial(i) for i < count, spread over the OpenMP threads. Each trial must
// draw its randomness from Rng(derive_seed(seed, i)) so its result does not depend on
// which thread ran it or when: the returned vector is then the same for any thread
// count. An exception thrown by a trial is rethrown here after the loop (an exception
// escaping an OpenMP region would terminate the program).
template <typename Result, typename Trial>
std::vector<Result> run_trials(std::size_t count, const std::string& label, Trial trial) {
  std::vector<Result> results(count);
  Progress progress(label, count);
  std::exception_ptr first_error;
  std::mutex error_mutex;
#pragma omp parallel for schedule(dynamic, 1)
  for (std::size_t i = 0; i < count; ++i) {
    try {
      results[i] = trial(i);
    } catch (...) {
      std::lock_guard lock(error_mutex);
      if (!first_error) first_error = std::current_exception();
    }
    progress.tick();
  }
  if (first_error) std::rethrow_exception(first_error);
  return results;
}

}  // namespace attnlab
