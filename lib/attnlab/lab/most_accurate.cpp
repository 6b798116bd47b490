// "Linformer is the most accurate of the five", judged from per-seed accuracies (most_accurate.hpp).
#include "attnlab/lab/most_accurate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
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

Judgement judge_exact_best_linformer_below(const std::map<std::string, std::vector<double>>& accuracy) {
  std::map<std::string, MeanInterval> m;
  for (const auto& name : seed002_methods()) {
    const auto it = accuracy.find(name);
    if (it == accuracy.end() || it->second.size() < 2)
      throw std::invalid_argument(fmt::format("judge_exact_best_linformer_below: {} has {} accuracies, an interval needs two", name,
                                              it == accuracy.end() ? 0 : it->second.size()));
    m.emplace(name, student_t_mean_interval(it->second));
  }
  const Interval& exact = m.at("exact").interval;
  std::vector<ConditionOutcome> parts;
  std::string above;
  for (const auto& name : seed002_methods())
    if (name != "exact" && m.at(name).interval.lower > exact.upper)
      above += fmt::format("{}{} {}", above.empty() ? "" : ", ", name, interval_text(m.at(name)));
  parts.push_back({"none above exact",
                   above.empty() ? fmt::format("exact {} with no interval above it", interval_text(m.at("exact")))
                                 : fmt::format("exact {} with {} above it", interval_text(m.at("exact")), above),
                   above.empty() ? Verdict::holds : Verdict::fails});
  const MeanInterval& lin = m.at(kSeed002Best);
  for (const auto& name : kLinformerBelow) {
    const MeanInterval& other = m.at(name);
    const Verdict v = separate(lin.interval.upper < other.interval.lower, lin.interval.lower > other.interval.upper);
    parts.push_back({"linformer below " + name,
                     fmt::format("Linformer {} {} {} {}", interval_text(lin),
                                 v == Verdict::holds ? "below" : v == Verdict::fails ? "above" : "against", name, interval_text(other)),
                     v});
  }
  Judgement j = judge_outcomes_by_condition(parts, "The intervals touch or overlap");
  if (j.note.empty()) {  // holds or fails: every part decided one way, each named with its intervals
    std::string all;
    for (const auto& p : parts) all += (all.empty() ? "" : "; ") + p.description;
    j.note = fmt::format("Every part {}: {}.", j.verdict == Verdict::holds ? "holds" : "fails", all);
  }
  j.observed = static_cast<double>(std::count_if(parts.begin(), parts.end(), [](const ConditionOutcome& c) { return c.outcome == Verdict::fails; }));
  return j;
}

}  // namespace attnlab
