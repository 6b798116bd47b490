// Wall-clock timing by the median of repeated runs.
#pragma once

#include <chrono>
#include <functional>
#include <vector>

namespace attnlab {

// Runs `work` once to warm caches, then `repeats` timed times; returns the seconds of each run.
std::vector<double> time_repeats(const std::function<void()>& work, int repeats);

// Median seconds of `repeats` runs after one warm-up.
double median_seconds(const std::function<void()>& work, int repeats);

// Stops the optimiser from discarding a result whose only use is being timed.
template <typename T>
inline void keep_alive(const T& value) {
  asm volatile("" : : "g"(&value) : "memory");
}

}  // namespace attnlab
