// A model's attention weights inspected head by head against the seeds' weight claims (model_inspection.hpp).
#include "attnlab/lab/model_inspection.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <limits>

#include "attnlab/lab/parallel_trials.hpp"
#include "attnlab/lab/progress.hpp"
#include "attnlab/lab/statistics.hpp"
#include "attnlab/lab/weight_claims.hpp"
#include "attnlab/linalg/power_of_two_scaling.hpp"
#include "attnlab/linalg/residual_ratio.hpp"
#include "attnlab/qk/qk_merge.hpp"
#include "attnlab/theory/attention_params.hpp"

namespace attnlab {

namespace {

constexpr const char* kHeadsFile = "inspect_heads.csv";
constexpr const char* kLayersFile = "inspect_layers.csv";
constexpr const char* kCostsFile = "inspect_costs.csv";
constexpr const char* kCountsFile = "inspect_param_counts.csv";
constexpr const char* kTimingFile = "inspect_timing.csv";
constexpr const char* kExperiment = "attnlab_inspect";
// G1's head numbers, as exp_param_growth counts them (and the model's own, should it have more).
constexpr std::int64_t kMaxHeads = 64;

bool augmented(const QkLayoutPlan& p) { return p.has_q_bias() || p.has_k_bias(); }

// One head in both forms, in precision T.
template <typename T>
void measure_head(const QkCheckpoint& c, Eigen::Index l, Eigen::Index h, HeadInspection* out) {
  HeadWeights<T> w;
  c.head(h, w);
  const QkLayoutPlan& p = c.plan();
  out[0] = {l, h, p.kv_head(h), "weights", p.d, factored_spectrum(w.wq, w.wk)};
  if (augmented(p))
    out[1] = {l, h, p.kv_head(h), "augmented", p.d + 1, factored_spectrum(append_bias_row(w.wq, w.bq), append_bias_row(w.wk, w.bk))};
  for (int i = 0; i < (augmented(p) ? 2 : 1); ++i) {
    const FactoredSpectrum& f = out[i].spectrum;
    if (!std::isfinite(f.m_norm) || !std::isfinite(f.s_norm) || !std::isfinite(f.lambda_next))
      throw HeadRangeError(fmt::format("layer {} head {} ({} form): ||W_Q W_K^T||_F is past the largest double "
                                       "(max |W_Q| 2^{}, max |W_K| 2^{}); its norms cannot be reported",
                                       l, h, out[i].form, max_abs_exponent(w.wq), max_abs_exponent(w.wk)));
  }
}

std::string precision_name(bool in_double) { return in_double ? "double" : "float"; }

// The largest value seen and the first head it was seen at.
struct Worst {
  double value = -std::numeric_limits<double>::infinity();
  const HeadInspection* at = nullptr;
  void add(double v, const HeadInspection& h) {
    if (at == nullptr || v > value || std::isnan(v)) value = v, at = &h;
  }
  std::string where() const { return at ? fmt::format("layer {} head {}", at->layer, at->head) : "no head"; }
};

AttentionShape model_shape(const QkLayoutPlan& p, std::int64_t h) {
  // V is not read: its width is taken to be the query width, as in multi-head attention without grouping.
  return {p.d, p.heads * p.d_k, p.heads * p.d_k, h, augmented(p)};
}

}  // namespace

std::string inspection_title(const ModelInspection& r) {
  const QkLayoutPlan& p = r.plan;
  return fmt::format("{} ({} layout{}: {} layers x {} heads{}, d {}, d_k {}, {}{}, in {})", r.model, p.layout,
                     p.prefix.empty() ? "" : fmt::format(", prefix \"{}\"", p.prefix), p.layers, p.heads,
                     p.kv_heads != p.heads ? fmt::format(" sharing {} key heads", p.kv_heads) : "", p.d, p.d_k,
                     fmt::join(p.dtypes, "/"), augmented(p) ? ", with biases" : "", precision_name(r.in_double));
}

namespace {

constexpr const char* kRotaryNote =
    " Rotary positions: q and k are rotated by their positions, so W_Q W_K^T is the score form at relative position 0 "
    "only (at offset m the form is W_Q R_m W_K^T); exactness claims about scores (R4, R11) are not judged here.";

}  // namespace

ModelInspection inspect_model(QkCheckpoint& c, const std::string& model, bool in_double, int threads) {
  ModelInspection r;
  r.plan = c.plan();
  r.model = model;
  r.in_double = in_double;
  r.threads = threads;
  const Eigen::Index L = r.plan.layers, H = r.plan.heads, forms = augmented(r.plan) ? 2 : 1;
  Progress progress("inspecting " + model, static_cast<std::size_t>(L * H));
  for (Eigen::Index l = 0; l < L; ++l) {
    const auto start = std::chrono::steady_clock::now();
    c.load_layer(l, in_double);
    std::vector<HeadInspection> layer(static_cast<std::size_t>(H * forms));
    parallel_trials(static_cast<std::size_t>(H), [&](std::size_t h) {
      HeadInspection* out = &layer[h * static_cast<std::size_t>(forms)];
      if (in_double) measure_head<double>(c, l, static_cast<Eigen::Index>(h), out);
      else measure_head<float>(c, l, static_cast<Eigen::Index>(h), out);
      progress.tick();
    });
    LayerTiming t{l, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 0};
    for (const auto& h : layer) t.flops += h.spectrum.flops;
    r.timing.push_back(t);
    r.heads.insert(r.heads.end(), layer.begin(), layer.end());
  }
  return r;
}

CsvTable inspection_heads_table(const ModelInspection& r) {
  CsvTable t({int_col("layer"), int_col("head"), int_col("kv_head"), text_col("form"), int_col("d"), int_col("d_k"),
              text_col("precision"), real_col("m_norm"), real_col("skew_share"), int_col("rank_M"), int_col("nonzero_eig_S"),
              int_col("positive_eig_S"), int_col("negative_eig_S"), real_col("s_norm"), real_col("kept_share_dk"),
              real_col("lambda_next"), real_col("r6_ratio")});
  for (const auto& h : r.heads) {
    const FactoredSpectrum& f = h.spectrum;
    t.add_row({h.layer, h.head, h.kv_head, h.form, r.plan.d, r.plan.d_k, precision_name(r.in_double), f.m_norm, f.skew_share,
               f.rank_m, f.nonzero_s, f.positive_s, f.negative_s, f.s_norm, f.kept_share, f.lambda_next, f.r6_ratio});
  }
  return t;
}

CsvTable inspection_layers_table(const ModelInspection& r) {
  CsvTable t({int_col("layer"), text_col("form"), int_col("heads"), int_col("kv_heads"), int_col("d"), int_col("d_k"),
              real_col("skew_share_min"), real_col("skew_share_median"), real_col("skew_share_max"),
              int_col("skew_share_max_head"), int_col("rank_M_max"), int_col("nonzero_eig_S_min"), int_col("nonzero_eig_S_max"),
              real_col("kept_share_dk_min"), int_col("kept_share_dk_min_head"), real_col("r6_ratio_max")});
  for (Eigen::Index l = 0; l < r.plan.layers; ++l)
    for (const char* form : {"weights", "augmented"}) {
      std::vector<const HeadInspection*> rows;
      for (const auto& h : r.heads)
        if (h.layer == l && h.form == form) rows.push_back(&h);
      if (rows.empty()) continue;
      std::vector<double> skew;
      Worst max_skew, min_kept, max_rank, max_r6, max_nonzero, min_nonzero;
      for (const HeadInspection* h : rows) {
        skew.push_back(h->spectrum.skew_share);
        max_skew.add(h->spectrum.skew_share, *h);
        min_kept.add(-h->spectrum.kept_share, *h);
        max_rank.add(double(h->spectrum.rank_m), *h);
        max_r6.add(h->spectrum.r6_ratio, *h);
        max_nonzero.add(double(h->spectrum.nonzero_s), *h);
        min_nonzero.add(-double(h->spectrum.nonzero_s), *h);
      }
      t.add_row({l, form, r.plan.heads, r.plan.kv_heads, r.plan.d, r.plan.d_k, *std::min_element(skew.begin(), skew.end()),
                 median(skew), max_skew.value, max_skew.at->head, long(max_rank.value), long(-min_nonzero.value),
                 long(max_nonzero.value), -min_kept.value, min_kept.at->head, max_r6.value});
    }
  return t;
}

CsvTable inspection_costs_table(const ModelInspection& r) {
  const std::int64_t d = r.plan.d, dk = r.plan.d_k;
  CsvTable t({int_col("n"), int_col("d"), int_col("d_k"), int_col("merged_parameters"), int_col("factored_parameters"),
              text_col("factored_smaller"), text_col("d_gt_2dk"), real_col("factored_madds"), real_col("merged_madds"),
              real_col("madd_ratio"), real_col("crossover_d_k"), text_col("factored_cheaper")});
  for (const std::int64_t n : kInspectLengths) {
    const double fac = factored_score_multiply_adds(double(n), double(d), double(dk)), mer = merged_score_multiply_adds(double(n), double(d));
    t.add_row({n, d, dk, merged_parameter_count(d), factored_parameter_count(d, dk),
               factored_parameter_count(d, dk) < merged_parameter_count(d), d > 2 * dk, fac, mer, fac / mer,
               crossover_head_dim(double(n), double(d)), fac < mer});
  }
  return t;
}

CsvTable inspection_param_counts_table(const ModelInspection& r) {
  CsvTable t({int_col("d_e"), int_col("d_k"), int_col("d_v"), text_col("bias"), int_col("h"), int_col("parameters"),
              real_col("remark11_formula"), text_col("model_h")});
  for (std::int64_t h = 1; h <= std::max<std::int64_t>(kMaxHeads, r.plan.heads); ++h) {
    const AttentionShape s = model_shape(r.plan, h);
    if (!head_count_allowed(s)) continue;
    const std::int64_t c = parameter_count(s);
    t.add_row({s.d_e, s.d_k, s.d_v, s.bias, h, c, s.bias ? double(c) : remark11_count(s), h == r.plan.heads});
  }
  return t;
}

CsvTable inspection_timing_table(const ModelInspection& r) {
  CsvTable t({int_col("layer"), int_col("heads"), text_col("precision"), int_col("threads"), real_col("seconds"),
              real_col("flops"), real_col("gflops")});
  for (const auto& l : r.timing)
    t.add_row({l.layer, r.plan.heads, precision_name(r.in_double), r.threads, l.seconds, l.flops, l.seconds > 0 ? l.flops / l.seconds * 1e-9 : 0.0});
  return t;
}

InspectionClaims judge_inspection(const ModelInspection& r, const std::filesystem::path& dir) {
  const QkLayoutPlan& p = r.plan;
  const std::string model = inspection_title(r), rotary = p.rotary ? kRotaryNote : "";
  const double dk = static_cast<double>(p.d_k);
  WorstByCondition r2, r5, r6;
  Worst rank, nonzero, r6_worst, kept, aug_rank, aug_nonzero, aug_r6;
  for (const auto& h : r.heads) {
    const FactoredSpectrum& f = h.spectrum;
    if (h.form != "weights") {
      aug_rank.add(double(f.rank_m), h), aug_nonzero.add(double(f.nonzero_s), h), aug_r6.add(f.r6_ratio, h);
      continue;
    }
    const std::string layer = fmt::format("layer {}", h.layer);
    r2.add(layer, layer, double(f.rank_m) / dk);
    r5.add(layer, layer, double(f.nonzero_s) / dk);
    r6.add(layer, layer, f.r6_ratio);
    rank.add(double(f.rank_m), h), nonzero.add(double(f.nonzero_s), h), r6_worst.add(f.r6_ratio, h), kept.add(-f.kept_share, h);
  }
  const auto evidence = [&](const char* file) { return (dir / file).generic_string(); };
  const auto with_bias = [&](const Worst& w, const char* what) {
    return augmented(p) ? fmt::format(" With the biases ([W; b^T], order d + 1): {} up to {} ({}).", what, w.value, w.where()) : std::string();
  };
  InspectionClaims out;
  const auto add = [&](const std::string& id, const Judgement& j, const char* metric, double threshold, const char* file,
                       const std::string& note, const std::string& line) {
    out.rows.push_back({id, j.verdict, metric, j.observed, threshold, evidence(file),
                        "On " + model + ". " + (j.note.empty() ? "" : j.note + " ") + note, kExperiment});
    out.summary.push_back(fmt::format("{:<3} {:<12} {}", id, to_string(j.verdict), line));
  };

  const Judgement j2 = judge_by_condition(r2, kCountRatioThreshold);
  add("R2", j2, kR2Metric, kCountRatioThreshold, kHeadsFile,
      fmt::format("Worst head: {} (rank {} of d_k {}).{}{}", rank.where(), rank.value, p.d_k, with_bias(aug_rank, "rank"), rotary),
      fmt::format("numerical rank of W_Q W_K^T / d_k: at most {:.4g} (worst: {}, rank {} of d_k {})", j2.observed, rank.where(), rank.value, p.d_k));
  const Judgement j5 = judge_by_condition(r5, kCountRatioThreshold);
  add("R5", j5, kR5Metric, kCountRatioThreshold, kHeadsFile,
      fmt::format("{} Worst head: {} ({} nonzero eigenvalues, {} positive and {} negative).{}{}", kR5Note, nonzero.where(),
                  nonzero.value, nonzero.at->spectrum.positive_s, nonzero.at->spectrum.negative_s,
                  with_bias(aug_nonzero, "nonzero eigenvalues"), rotary),
      fmt::format("nonzero eigenvalues of S_w / d_k: up to {:.4g} (worst: {}, {} nonzero, {} positive and {} negative, d_k {})", j5.observed,
                  nonzero.where(), nonzero.value, nonzero.at->spectrum.positive_s, nonzero.at->spectrum.negative_s, p.d_k));
  const Judgement j6 = judge_by_condition(r6, kResidualRatioThreshold);
  add("R6", j6, "max over heads of |lambda_{d_k+1}| / (d eps ||S_w||_F): R6's scaled error |y^T M y - sum_{i<=d_k} lambda_i (u_i^T y)^2| / (d ||S_w|| ||y||^2 eps) at its worst y",
      kResidualRatioThreshold, kHeadsFile,
      fmt::format("Worst head: {}. The d_k leading eigenpairs keep as little as {:.4g} of ||S_w||_F^2 ({}).{}{}", r6_worst.where(),
                  -kept.value, kept.where(), with_bias(aug_r6, "the ratio"), rotary),
      fmt::format("the d_k leading eigenpairs of S_w keep as little as {:.1f}% of ||S_w||_F^2 (worst: {}); worst-y error ratio {:.3g} against {}",
                  -100 * kept.value, kept.where(), j6.observed, kResidualRatioThreshold));

  const std::int64_t d = p.d, k = p.d_k;
  S1Tally s1;
  s1.add(d, k, merged_parameter_count(d), factored_parameter_count(d, k));
  add("S1", s1.judge(), kS1Metric, kNoMismatch, kCostsFile,
      fmt::format("At d = {}, d_k = {}: factored 2 d d_k = {} parameters per head, merged d^2 = {} ({:.3g}x); d > 2 d_k is {}.", d, k,
                  factored_parameter_count(d, k), merged_parameter_count(d),
                  double(merged_parameter_count(d)) / double(factored_parameter_count(d, k)), d > 2 * k ? "true" : "false"),
      fmt::format("per head: factored 2 d d_k = {} parameters, merged d^2 = {} ({:.3g}x)", factored_parameter_count(d, k),
                  merged_parameter_count(d), double(merged_parameter_count(d)) / double(factored_parameter_count(d, k))));
  S2Tally s2;
  std::vector<std::string> ratios;
  for (const std::int64_t n : kInspectLengths) {
    const double fac = factored_score_multiply_adds(double(n), double(d), double(k)), mer = merged_score_multiply_adds(double(n), double(d));
    s2.add(n, d, k, fac, mer);
    ratios.push_back(fmt::format("n {}: {:.3g}", n, fac / mer));
  }
  add("S2", s2.judge(), kS2Metric, 1.0, kCostsFile,
      fmt::format("At d = {}, d_k = {}: factored cheaper at {} of {} lengths; multiply-adds factored / merged: {}; the crossover "
                  "d_k = d (d + n) / (2 d + n) lies between {:.4g} (n {}) and {:.4g} (n {}).",
                  d, k, s2.cheaper(), s2.points(), fmt::join(ratios, ", "), crossover_head_dim(double(kInspectLengths.front()), double(d)),
                  kInspectLengths.front(), crossover_head_dim(double(kInspectLengths.back()), double(d)), kInspectLengths.back()),
      fmt::format("score multiply-adds factored / merged: {}", fmt::join(ratios, ", ")));
  G1Tally g1;
  std::vector<std::int64_t> counts;
  std::int64_t disallowed = 0;
  const std::int64_t max_h = std::max<std::int64_t>(kMaxHeads, p.heads);
  for (std::int64_t h = 1; h <= max_h; ++h) {
    const AttentionShape s = model_shape(p, h);
    if (head_count_allowed(s)) counts.push_back(parameter_count(s));
    else ++disallowed;
  }
  g1.add_shape(counts, disallowed);
  add("G1", g1.judge(), kG1Metric, kCountSpreadThreshold, kCountsFile,
      fmt::format("The model's widths (d_e {}, d_k = d_v = {} in all, {}): {} parameters for each of the {} head numbers in 1..{} that "
                  "divide them, the model's {} among them; V is not read, its width is taken as the query width.{}",
                  d, p.heads * k, augmented(p) ? "with bias rows" : "no bias", counts.empty() ? 0 : counts.front(), counts.size(), max_h,
                  p.heads,
                  p.kv_heads != p.heads ? fmt::format(" The model itself shares {} key (and value) heads among its {} query heads: it has "
                                                      "fewer K and V parameters than G1's multi-head count.", p.kv_heads, p.heads)
                                        : ""),
      fmt::format("{} parameters at every allowed h of 1..{} for the model's widths", counts.empty() ? 0 : counts.front(), max_h));

  std::vector<double> skew;
  Worst lo, hi;
  for (const auto& h : r.heads)
    if (h.form == "weights") skew.push_back(h.spectrum.skew_share), hi.add(h.spectrum.skew_share, h), lo.add(-h.spectrum.skew_share, h);
  out.summary.push_back(fmt::format("skew share ||R_w||_F / ||M||_F over the {} heads: median {:.3f}, from {:.3f} ({}) to {:.3f} ({})",
                                    skew.size(), median(skew), -lo.value, lo.where(), hi.value, hi.where()));
  if (p.rotary)
    out.summary.push_back("rotary positions: W_Q W_K^T is the score form at relative position 0 only; R4/R11-style exactness is not judged");
  return out;
}

void write_inspection(const ModelInspection& r, const InspectionClaims& claims, const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string inputs = "model: " + r.model;
  for (const auto& [table, file] : {std::pair{inspection_heads_table(r), kHeadsFile}, {inspection_layers_table(r), kLayersFile},
                                    {inspection_costs_table(r), kCostsFile}, {inspection_param_counts_table(r), kCountsFile},
                                    {inspection_timing_table(r), kTimingFile}})
    table.with_column(text_col("inputs"), inputs).write(dir / file);
  merge_into_ledger(dir / "claims.csv", claims.rows);
}

}  // namespace attnlab
