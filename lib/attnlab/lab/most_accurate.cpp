// "Linformer is the most accurate of the five", judged from per-seed accuracies (most_accurate.hpp).
#include "attnlab/lab/most_accurate.hpp"

#include <fmt/format.h>

#include <utility>

namespace attnlab {

namespace {

std::string interval_text(const MeanInterval& m) {
  return fmt::format("{:.4f} [{:.4f}, {:.4f}]", m.mean, m.interval.lower, m.interval.upper);
}

}  // namespace

const std::vector<std::string>& seed002_methods() {
  static const std::vector<std::string> methods = {"exact", "linear-elu", "linear-shen", "linformer", "random-fourier", "favor",
                                                   "nystrom"};
  return methods;
}

MostAccurate judge_most_accurate(const std::map<std::string, std::vector<double>>& accuracy,
                                 const std::vector<std::string>& beside, const std::vector<std::string>& labels) {
  MostAccurate out;
  std::vector<MethodInterval> intervals;
  std::vector<std::pair<std::string, MeanInterval>> groups;
  for (const auto& m : seed002_methods())
    if (const auto it = accuracy.find(m); it != accuracy.end() && !it->second.empty()) {
      groups.emplace_back(m, student_t_mean_interval(it->second));
      intervals.push_back({m, groups.back().second.interval.lower, groups.back().second.interval.upper});
    }
  for (const auto& [name, g] : groups) out.means += fmt::format("{}{} {}", out.means.empty() ? "" : "; ", name, interval_text(g));
  for (std::size_t i = 0; i < beside.size(); ++i)
    if (const auto it = accuracy.find(beside[i]); it != accuracy.end() && !it->second.empty())
      out.means += fmt::format("{}beside them, {} {}", out.means.empty() ? "" : "; ", labels.at(i),
                               interval_text(student_t_mean_interval(it->second)));
  if (groups.empty()) return out;
  out.seeds = groups.front().second.count;
  if (accuracy.count(kSeed002Best) == 0 || groups.size() < 2) return out;
  out.judged = true;
  out.judgement = judge_best_of(intervals, kSeed002Best);
  return out;
}

}  // namespace attnlab
