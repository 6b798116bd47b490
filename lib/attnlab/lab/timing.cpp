// Wall-clock timing by the median of repeated runs.
#include "attnlab/lab/timing.hpp"

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

}  // namespace attnlab
