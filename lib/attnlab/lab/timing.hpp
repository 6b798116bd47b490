// Wall-clock timing by the median of repeated runs.
#pragma once

#include <chrono>
#include <functional>
#include <vector>

namespace attnlab {

// Runs `work` once to warm caches (unless `warm_up` is false: runs of seconds gain
// nothing from it), then `repeats` timed times; returns the seconds of each run.
std::vector<double> time_repeats(const std::function<void()>& work, int repeats, bool warm_up = true);

// Median seconds of `repeats` runs, after one warm-up unless `warm_up` is false.
double median_seconds(const std::function<void()>& work, int repeats, bool warm_up = true);

// Stops the optimiser from discarding a result whose only use is being timed.
template <typename T>
inline void keep_alive(const T& value) {
  asm volatile("" : : "g"(&value) : "memory");
}

}  // namespace attnlab
