// The trained models against the linear baseline (baseline_comparison.hpp).
#include "attnlab/lab/baseline_comparison.hpp"

#include <fmt/format.h>

#include <map>
#include <vector>

#include "attnlab/io/table_reader.hpp"
#include "attnlab/lab/recall_tables.hpp"
#include "attnlab/lab/seed_means.hpp"
#include "attnlab/lab/training_tables.hpp"
#include "attnlab/model/identity_mixer.hpp"
#include "attnlab/model/pixel_logistic.hpp"

namespace attnlab {

BaselineComparison compare_with_baseline(const std::filesystem::path& runs_file, const std::string& method) {
  namespace tt = training_tables;
  BaselineComparison c;
  std::map<std::string, std::vector<double>> accuracy;
  if (std::filesystem::is_regular_file(runs_file)) {
    const TableReader t(runs_file);
    for (std::size_t r = 0; r < t.rows(); ++r) accuracy[t.text(r, tt::kMethod)].push_back(t.real(r, tt::kTestAccuracy));
  }
  if (accuracy[method].empty() || accuracy[kPixelLogisticBaseline].empty()) {
    c.sentence = fmt::format("Linear baseline: no {} with {} and {} rows beside these tables, so this run did not compare "
                             "the {} models with the linear baseline.",
                             tt::kRunsFile, method, kPixelLogisticBaseline, method);
    return c;
  }
  c.measured = true;
  c.method = student_t_mean_interval(accuracy[method]);
  c.baseline = student_t_mean_interval(accuracy[kPixelLogisticBaseline]);
  const Judgement j = judge_best_of({{method, c.method.interval.lower, c.method.interval.upper},
                                     {kPixelLogisticBaseline, c.baseline.interval.lower, c.baseline.interval.upper}},
                                    method);
  c.above = j.verdict == Verdict::holds;
  c.sentence = fmt::format(
      "Linear baseline (softmax regression on the 784 normalised pixels, trained in the same sweep by the same engine, "
      "optimiser, schedule, batch, epochs and seeds): mean test accuracy {} {} over {} seeds against {} {} over {} (95% "
      "Student-t): {}",
      method, mean_interval_text(c.method), c.method.count, kPixelLogisticBaseline, mean_interval_text(c.baseline), c.baseline.count,
      c.above ? fmt::format("the {} models' interval lies above the baseline's.", method)
              : fmt::format("the {} models' interval does NOT lie above the baseline's, so these models are not shown to "
                            "have learned more than a linear classifier on the pixels.",
                            method));
  return c;
}

BaselineComparison compare_with_recall_baseline(const std::filesystem::path& runs_file, const std::string& method) {
  namespace rt = recall_tables;
  BaselineComparison c;
  std::map<std::string, std::vector<double>> accuracy;
  std::int64_t pairs = 0, values = 0;
  if (std::filesystem::is_regular_file(runs_file)) {
    const TableReader t(runs_file);
    for (std::size_t r = 0; r < t.rows(); ++r) {
      if (r == 0) pairs = t.integer(r, rt::kPairs), values = t.integer(r, rt::kValues);
      if (t.integer(r, rt::kPairs) == pairs) accuracy[t.text(r, rt::kMethod)].push_back(t.real(r, rt::kAccuracy));
    }
  }
  if (accuracy[method].empty() || accuracy[kNoAttentionBaseline].empty()) {
    c.sentence = fmt::format("Baseline without attention: no {} with {} and {} rows beside these tables, so this run did not "
                             "compare the {} recall models with it.",
                             rt::kRunsFile, method, kNoAttentionBaseline, method);
    return c;
  }
  c.measured = true;
  c.method = student_t_mean_interval(accuracy[method]);
  c.baseline = student_t_mean_interval(accuracy[kNoAttentionBaseline]);
  c.above = c.method.interval.lower > c.baseline.interval.upper;
  c.sentence = fmt::format(
      "Baseline without attention (the same recall model with the identity in place of attention, trained in the same sweep "
      "the same way): mean query accuracy {} {} over {} seeds against {} {} over {} (95% Student-t; chance 1/V = {:.4f}, "
      "copying a value of the sequence 1/N = {:.4f}): {}",
      method, mean_interval_text(c.method), c.method.count, kNoAttentionBaseline, mean_interval_text(c.baseline), c.baseline.count,
      1.0 / static_cast<double>(values), 1.0 / static_cast<double>(pairs),
      c.above ? fmt::format("the {} models' interval lies above the baseline's.", method)
              : fmt::format("the {} models' interval does NOT lie above the baseline's, so these models are not shown to recall.",
                            method));
  return c;
}

}  // namespace attnlab
