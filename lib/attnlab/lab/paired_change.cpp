// Paired differences grouped by replicate (paired_change.hpp).
#include "attnlab/lab/paired_change.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <vector>

namespace attnlab {

void PairedChange::add(std::int64_t replicate, double before, double after) {
  const double d = after - before;
  (d > 0 ? higher_ : d < 0 ? lower_ : equal_) += 1;
  auto& [sum, count] = sums_[replicate];
  sum += d;
  count += 1;
}

MeanInterval PairedChange::mean_over_replicates() const {
  if (sums_.empty()) throw std::invalid_argument("PairedChange: no pairs were added");
  std::vector<double> means;
  for (const auto& [replicate, s] : sums_) means.push_back(s.first / s.second);
  return student_t_mean_interval(means);
}

std::string PairedChange::text() const {
  const MeanInterval m = mean_over_replicates();
  const char* verb = m.interval.lower > 0 ? "a rise" : m.interval.upper < 0 ? "a fall" : "no measurable change";
  return fmt::format("{:+.3g} [{:+.3g}, {:+.3g}] ({})", m.mean, m.interval.lower, m.interval.upper, verb);
}

}  // namespace attnlab
