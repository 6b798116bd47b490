// Seed 004's parameter bookkeeping (G1, G2, G7): counts across head numbers, bias by
// augmentation, and zero-padded growth of W_Q, W_K at the moment of growth; and the corrected
// statement of G7 (G7.c) on its own confirming trials.
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <string>
#include <vector>

#include "attnlab/theory/attention_loss.hpp"
#include "attnlab/theory/attention_params.hpp"
#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/table_reader.hpp"
#include "attnlab/lab/correction.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/lab/parallel_trials.hpp"
#include "attnlab/io/ledger.hpp"
#include "attnlab/linalg/residual_ratio.hpp"
#include "attnlab/core/rng.hpp"
#include "attnlab/lab/verdict.hpp"
#include "attnlab/lab/weight_claims.hpp"

using namespace attnlab;

namespace exp_param_growth {  // compiled beside other programs, linked alone (CMakeLists.txt: attnlab_programs)

namespace {

// Column names, spelled once for the tables' writers and their judges (a rename cannot split them).
namespace col {
constexpr const char* bias = "bias";
constexpr const char* bias_product_ratio = "bias_product_ratio";
constexpr const char* bitwise = "bitwise";
constexpr const char* both_sides_new_score_change = "both_sides_new_score_change";
constexpr const char* d = "d";
constexpr const char* d_e = "d_e";
constexpr const char* d_k = "d_k";
constexpr const char* d_v = "d_v";
constexpr const char* h = "h";
constexpr const char* n = "n";
constexpr const char* one_side_first_order_prediction = "one_side_first_order_prediction";
constexpr const char* one_side_new_grad = "one_side_new_grad";
constexpr const char* one_side_product_ratio = "one_side_product_ratio";
constexpr const char* one_side_step_loss_change = "one_side_step_loss_change";
constexpr const char* p = "p";
constexpr const char* parameters = "parameters";
constexpr const char* precision = "precision";
constexpr const char* product_bitwise = "product_bitwise";
constexpr const char* product_ratio = "product_ratio";
constexpr const char* ratio = "ratio";
constexpr const char* remark11_formula = "remark11_formula";
constexpr const char* rescale_ratio = "rescale_ratio";
constexpr const char* rescaled_score_change = "rescaled_score_change";
constexpr const char* zero_padded_grad_ratio = "zero_padded_grad_ratio";
constexpr const char* zero_padded_new_grad = "zero_padded_new_grad";
constexpr const char* zero_padded_step_loss_change = "zero_padded_step_loss_change";
}  // namespace col

constexpr double kRatioThreshold = kResidualRatioThreshold;
constexpr double kStep = 1e-3;  // SGD step used to probe the loss after growth

// G2 in precision T: largest entrywise |[X|1][W;b^T] - (XW + 1b^T)| over (d+1) eps (|X||W| + |b|),
// the rounding bound of two orders of summing the same d + 1 products; and whether bitwise equal.
struct BiasResult {
  double ratio = 0;
  bool bitwise = false;
};
template <typename T>
BiasResult bias_augmentation(Eigen::Index n, Eigen::Index d, Eigen::Index m, Rng& rng) {
  const Mat<T> x = gaussian_matrix<T>(n, d, rng), w = gaussian_matrix<T>(d, m, rng);
  const Vec<T> b = gaussian_matrix<T>(m, 1, rng);
  const Mat<T> lhs = append_ones_column(x) * append_bias_row(w, b);
  Mat<T> rhs = x * w;
  rhs.rowwise() += b.transpose();
  const Mat<double> mag =
      (x.cwiseAbs() * w.cwiseAbs()).template cast<double>().rowwise() + b.cwiseAbs().template cast<double>().transpose();
  const Mat<double> diff = (lhs - rhs).template cast<double>().cwiseAbs();
  const double eps = std::numeric_limits<T>::epsilon();
  BiasResult r;
  r.ratio = (diff.array() / (double(d + 1) * eps * mag.array().max(std::numeric_limits<double>::min()))).maxCoeff();
  r.bitwise = (lhs.array() == rhs.array()).all();
  return r;
}

// G7 in precision T: grow d_k = k by p zero columns (Remark 2.2) and measure.
struct GrowthResult {
  double product_ratio = 0;     // ||X W_Q' W_K'^T X^T - X W_Q W_K^T X^T|| in rounding units
  double bias_product_ratio = 0;  // the same with [X | 1] and bias rows, padded as Remark 2.2 says
  bool product_bitwise = false;
  double rescaled_change = 0;   // ||S' - S|| / ||S|| when 1/sqrt(d_k) becomes 1/sqrt(d_k + p)
  double both_new_change = 0;   // ||S' - S|| / ||S|| with random new columns on both sides
  double zero_new_grad = 0;     // ||dL/d(new columns)|| when both sides are zero-padded
  double zero_step_change = 0;  // L after one SGD step minus L before, both sides zero
  double one_side_grad = 0;     // ||dL/dW_Q(new)|| with random new W_K columns, zero new W_Q
  double one_side_step_change = 0;
  double one_side_predicted = 0;  // first-order prediction -step ||grad||^2
};
// Given weights (and X) replace the draws of W_Q, W_K (and X); everything else is drawn.
template <typename T>
GrowthResult growth(Eigen::Index n, Eigen::Index d, Eigen::Index k, Eigen::Index p, Rng& rng, const GivenInputs& given) {
  const Mat<T> x = given.has("x") ? given.load<T>("x") : gaussian_matrix<T>(n, d, rng);
  const T sd = T(1 / std::sqrt(double(d)));
  const Mat<T> wq = given.used() ? given.load<T>("wq") : gaussian_matrix<T>(d, k, rng, sd);
  const Mat<T> wk = given.used() ? given.load<T>("wk") : gaussian_matrix<T>(d, k, rng, sd);
  const Eigen::Index dv = std::max<Eigen::Index>(1, d / 2);
  const AttentionLoss<T> loss(x, gaussian_matrix<T>(d, dv, rng, sd), gaussian_matrix<T>(dv, d, rng, sd),
                              gaussian_matrix<T>(n, d, rng));
  const T scale = T(1 / std::sqrt(double(k)));
  const Mat<T> wq2 = zero_pad_columns(wq, p), wk2 = zero_pad_columns(wk, p);
  GrowthResult r;
  const Mat<T> s_old = attention_scores(x, wq, wk, T(1)), s_new = attention_scores(x, wq2, wk2, T(1));
  const double unit = x.template cast<double>().squaredNorm() * wq.template cast<double>().norm() *
                      wk.template cast<double>().norm();
  r.product_ratio = residual_ratio<T>((s_new - s_old).template cast<double>().norm(), double(d), unit);
  r.product_bitwise = (s_new.array() == s_old.array()).all();
  const Mat<T> s_scaled = attention_scores(x, wq, wk, scale);
  const Mat<T> s_rescaled = attention_scores(x, wq2, wk2, T(1 / std::sqrt(double(k + p))));
  // Relative to zero scores (zero W_Q or W_K given), a change is 0 when nothing moved and infinite
  // otherwise: defined values for a degenerate input instead of 0/0.
  const auto relative_change = [](double change, double base) {
    if (base == 0) return change == 0 ? 0.0 : std::numeric_limits<double>::infinity();
    return change / base;
  };
  r.rescaled_change = relative_change((s_rescaled - s_scaled).template cast<double>().norm(), s_scaled.template cast<double>().norm());
  const Mat<T> wq_any = wq2 + new_columns_block(Mat<T>(gaussian_matrix<T>(d, p, rng, sd)), k);
  const Mat<T> wk_any = wk2 + new_columns_block(Mat<T>(gaussian_matrix<T>(d, p, rng, sd)), k);
  r.both_new_change = relative_change((attention_scores(x, wq_any, wk_any, scale) - s_scaled).template cast<double>().norm(),
                                      s_scaled.template cast<double>().norm());
  // One SGD step on the new columns only; the temperature stays at the old d_k.
  auto step_on_new = [&](const Mat<T>& q, const Mat<T>& kk, double& grad_norm, double& change, double* predicted) {
    const T before = loss.value(attention_scores(x, q, kk, scale));
    const auto g = factor_gradients(x, q, kk, scale, loss.gradient(attention_scores(x, q, kk, scale)));
    const Mat<T> gq = g.wq.rightCols(p), gk = g.wk.rightCols(p);
    grad_norm = std::sqrt(gq.template cast<double>().squaredNorm() + gk.template cast<double>().squaredNorm());
    Mat<T> q1 = q, k1 = kk;
    q1.rightCols(p) -= T(kStep) * gq;
    k1.rightCols(p) -= T(kStep) * gk;
    change = double(loss.value(attention_scores(x, q1, k1, scale))) - double(before);
    if (predicted) *predicted = -kStep * grad_norm * grad_norm;
  };
  step_on_new(wq2, wk2, r.zero_new_grad, r.zero_step_change, nullptr);
  const Mat<T> wk_one = wk2 + new_columns_block(Mat<T>(gaussian_matrix<T>(d, p, rng, sd)), k);
  step_on_new(wq2, wk_one, r.one_side_grad, r.one_side_step_change, &r.one_side_predicted);
  // With bias: X' = [X | 1], W' = [W; b^T]; the new columns are zero in the bias row too.
  const Mat<T> xa = append_ones_column(x);
  const Mat<T> wqa = append_bias_row(wq, Vec<T>(gaussian_matrix<T>(k, 1, rng, sd)));
  const Mat<T> wka = append_bias_row(wk, Vec<T>(gaussian_matrix<T>(k, 1, rng, sd)));
  const Mat<T> sa_old = attention_scores(xa, wqa, wka, T(1));
  const Mat<T> sa_new = attention_scores(xa, zero_pad_columns(wqa, p), zero_pad_columns(wka, p), T(1));
  const double unit_a = xa.template cast<double>().squaredNorm() * wqa.template cast<double>().norm() *
                        wka.template cast<double>().norm();
  r.bias_product_ratio = residual_ratio<T>((sa_new - sa_old).template cast<double>().norm(), double(d + 1), unit_a);
  return r;
}

// G7.c in precision T: grow d_k = k by p columns and check each part of the statement as a scaled residual.
struct GrowthConfirmed {
  double product_ratio = 0;    // zero new columns on both sides, without and with bias rows (the worse)
  double one_side_ratio = 0;   // zero new columns on one side, random on the other (either side; the worse)
  double grad_ratio = 0;       // the zero-padded columns' gradient (both sides zero)
  double rescale_ratio = 0;    // S at 1/sqrt(k + p) against sqrt(k / (k + p)) S at 1/sqrt(k)
  double both_new_change = 0;  // the note's contrast: ||S' - S|| / ||S|| with random new columns on both sides
};
template <typename T>
GrowthConfirmed growth_confirming(Eigen::Index n, Eigen::Index d, Eigen::Index k, Eigen::Index p, Rng& rng) {
  const Mat<T> x = gaussian_matrix<T>(n, d, rng);
  const T sd = T(1 / std::sqrt(double(d)));
  const Mat<T> wq = gaussian_matrix<T>(d, k, rng, sd), wk = gaussian_matrix<T>(d, k, rng, sd);
  const Mat<T> new_q = new_columns_block(Mat<T>(gaussian_matrix<T>(d, p, rng, sd)), k);
  const Mat<T> new_k = new_columns_block(Mat<T>(gaussian_matrix<T>(d, p, rng, sd)), k);
  const Mat<T> wq2 = zero_pad_columns(wq, p), wk2 = zero_pad_columns(wk, p);
  const double x2 = x.template cast<double>().squaredNorm();
  // ||S' - S|| in units of the products' rounding, d eps ||X||^2 ||W_Q'|| ||W_K'|| with the grown factors.
  const auto product_ratio = [&](const Mat<T>& xx, const Mat<T>& q0, const Mat<T>& k0, const Mat<T>& q1, const Mat<T>& k1) {
    const Mat<T> before = attention_scores(xx, q0, k0, T(1)), after = attention_scores(xx, q1, k1, T(1));
    const double unit = xx.template cast<double>().squaredNorm() * q1.template cast<double>().norm() *
                        k1.template cast<double>().norm();
    return residual_ratio<T>((after - before).template cast<double>().norm(), double(xx.cols()), unit);
  };
  GrowthConfirmed r;
  const Mat<T> xa = append_ones_column(x);
  const Mat<T> wqa = append_bias_row(wq, Vec<T>(gaussian_matrix<T>(k, 1, rng, sd)));
  const Mat<T> wka = append_bias_row(wk, Vec<T>(gaussian_matrix<T>(k, 1, rng, sd)));
  r.product_ratio = std::max(product_ratio(x, wq, wk, wq2, wk2),
                             product_ratio(xa, wqa, wka, zero_pad_columns(wqa, p), zero_pad_columns(wka, p)));
  r.one_side_ratio = std::max(product_ratio(x, wq, wk, wq2, Mat<T>(wk2 + new_k)), product_ratio(x, wq, wk, Mat<T>(wq2 + new_q), wk2));
  // Both sides zero: dL/dW_Q(new) = scale X^T G X W_K(new) = 0, and the same for W_K; scale the norm of what is
  // computed by the rounding of those products.
  const Eigen::Index dv = std::max<Eigen::Index>(1, d / 2);
  const AttentionLoss<T> loss(x, gaussian_matrix<T>(d, dv, rng, sd), gaussian_matrix<T>(dv, d, rng, sd),
                              gaussian_matrix<T>(n, d, rng));
  const T scale = T(1 / std::sqrt(double(k)));
  const Mat<T> g = loss.gradient(attention_scores(x, wq2, wk2, scale));
  const auto grads = factor_gradients(x, wq2, wk2, scale, g);
  const double new_grad = std::sqrt(grads.wq.rightCols(p).template cast<double>().squaredNorm() +
                                    grads.wk.rightCols(p).template cast<double>().squaredNorm());
  const double w_sum = wq.template cast<double>().norm() + wk.template cast<double>().norm();
  r.grad_ratio = residual_ratio<T>(new_grad, double(n), x2 * g.template cast<double>().norm() * w_sum * double(scale));
  // The temperature recomputed at k + p: exactly sqrt(k / (k + p)) times the scores at the old one.
  const Mat<T> s_old = attention_scores(x, wq, wk, scale);
  const Mat<T> s_new = attention_scores(x, wq2, wk2, T(1 / std::sqrt(double(k + p))));
  const double factor = std::sqrt(double(k) / double(k + p));
  const double s_unit = x2 * wq.template cast<double>().norm() * wk.template cast<double>().norm() * double(scale);
  r.rescale_ratio = residual_ratio<T>((s_new.template cast<double>() - factor * s_old.template cast<double>()).norm(), double(d), s_unit);
  const double s_norm = s_old.template cast<double>().norm();
  const Mat<T> s_both = attention_scores(x, Mat<T>(wq2 + new_q), Mat<T>(wk2 + new_k), scale);
  r.both_new_change = s_norm > 0 ? (s_both - s_old).template cast<double>().norm() / s_norm : 0.0;
  return r;
}

// G1's shapes: every (d_e, d_k, d_v) of the width grid, without and with bias (none with given weights:
// counts do not depend on weight values). Each shape's rows cover h in 1..kMaxHeads where h divides d_k
// and d_v; h = 1 always does, so every shape has rows.
constexpr std::int64_t kMaxHeads = 64;
struct CountShape {
  std::int64_t de, dk, dv;
  bool bias;
};
std::vector<CountShape> count_shapes(bool quick, const GivenInputs& given) {
  const std::vector<std::int64_t> widths = given.used() ? std::vector<std::int64_t>{}
                                         : quick ? std::vector<std::int64_t>{8, 12, 64}
                                                 : std::vector<std::int64_t>{1, 7, 8, 12, 64, 96, 512, 768};
  std::vector<CountShape> shapes;
  for (std::int64_t de : widths)
    for (std::int64_t dk : widths)
      for (std::int64_t dv : widths)
        for (bool bias : {false, true}) shapes.push_back({de, dk, dv, bias});
  return shapes;
}

// G2 and G7 trials, float and double: n x d, or the given (d, d_k) with n of the given X, else the
// sweep's lengths. G7 grows d_k = k by p zero columns.
struct Trial {
  Eigen::Index n, d, growth_d;  // growth needs d >= d_k + p
  bool single;
};
struct TrialPlan {
  std::vector<Trial> trials;
  Eigen::Index k = 2, p = 2;
};
TrialPlan trial_plan(bool quick, const GivenInputs& given) {
  const std::vector<Eigen::Index> sizes = quick ? std::vector<Eigen::Index>{1, 3, 16}
                                                : std::vector<Eigen::Index>{1, 2, 3, 16, 64, 128};
  TrialPlan plan;
  if (given.used()) {
    plan.k = given.matrix("wq").cols();
    for (Eigen::Index n : given.has("x") ? std::vector<Eigen::Index>{given.matrix("x").rows()} : sizes)
      for (bool single : {false, true}) plan.trials.push_back({n, given.matrix("wq").rows(), given.matrix("wq").rows(), single});
  } else {
    for (Eigen::Index n : sizes)
      for (Eigen::Index d : sizes)
        for (bool single : {false, true}) plan.trials.push_back({n, d, std::max<Eigen::Index>(d, plan.k + plan.p), single});
  }
  return plan;
}

constexpr const char* kCountsTable = "param_counts.csv";
constexpr const char* kBiasTable = "param_bias.csv";
constexpr const char* kGrowthTable = "param_growth.csv";
constexpr const char* kGrowthConfirmTable = "param_growth_confirm.csv";

// G7.c's confirming trials (lab/correction.hpp): drawn from their own base seed, at lengths, widths and growths
// (d_k, p) the trials above do not use, float and double.
struct ConfirmTrial {
  Eigen::Index n, d, k, p;
  bool single;
};
std::vector<ConfirmTrial> confirming_trials(bool quick) {
  std::vector<ConfirmTrial> trials;
  const std::vector<std::pair<Eigen::Index, Eigen::Index>> growths =
      quick ? std::vector<std::pair<Eigen::Index, Eigen::Index>>{{1, 3}, {3, 1}}
            : std::vector<std::pair<Eigen::Index, Eigen::Index>>{{1, 3}, {3, 1}, {4, 4}};
  for (Eigen::Index n : quick ? std::vector<Eigen::Index>{1, 5} : std::vector<Eigen::Index>{1, 5, 24, 96})
    for (Eigen::Index d : quick ? std::vector<Eigen::Index>{5, 24} : std::vector<Eigen::Index>{5, 24, 96})
      for (const auto& [k, p] : growths)
        for (bool single : {false, true}) trials.push_back({n, std::max(d, k + p), k, p, single});
  return trials;
}

// Measures the shard's shapes of G1 and its trials of G2 and G7 and writes their tables (with given
// weights only param_growth.csv).
void measure_growth(const ExperimentCli& cli, const Shard& shard) {
  const bool quick = cli.options().quick;
  const std::uint64_t seed = cli.options().seed;
  const GivenInputs& given = cli.given();

  // G1: every shape, with and without bias, every allowed h in 1..64.
  CsvTable counts({int_col(col::d_e), int_col(col::d_k), int_col(col::d_v), text_col(col::bias), int_col(col::h),
                   int_col(col::parameters), real_col(col::remark11_formula)});
  const auto shapes = count_shapes(quick, given);
  const Shard::Range shapes_range = shard.range(shapes.size());
  for (std::size_t i = shapes_range.begin; i < shapes_range.end; ++i) {
    const auto [de, dk, dv, bias] = shapes[i];
    for (std::int64_t h = 1; h <= kMaxHeads; ++h) {
      const AttentionShape s{de, dk, dv, h, bias};
      if (!head_count_allowed(s)) continue;
      const std::int64_t c = parameter_count(s);
      counts.add_row({de, dk, dv, bias, h, c, bias ? double(c) : remark11_count(s)});
    }
  }
  if (!given.used()) cli.write_table(counts, kCountsTable);

  // G2 and G7: one trial draws both, in parallel; each trial's seed from its index in the whole sweep.
  const TrialPlan plan = trial_plan(quick, given);
  const Shard::Range range = shard.range(plan.trials.size());
  std::vector<BiasResult> bias(range.size());
  std::vector<GrowthResult> grow(range.size());
  Progress progress("G2, G7 trials", range.size());
  parallel_trials(range.size(), [&](std::size_t j) {
    const std::size_t i = range.begin + j;
    Rng rng(derive_seed(seed, i));
    const auto& t = plan.trials[i];
    if (!given.used())
      bias[j] = t.single ? bias_augmentation<float>(t.n, t.d, 5, rng) : bias_augmentation<double>(t.n, t.d, 5, rng);
    grow[j] = t.single ? growth<float>(t.n, t.growth_d, plan.k, plan.p, rng, given)
                       : growth<double>(t.n, t.growth_d, plan.k, plan.p, rng, given);
    progress.tick();
  });
  CsvTable bias_table(
      {int_col(col::n), int_col(col::d), text_col(col::precision), real_col(col::ratio), text_col(col::bitwise)});
  CsvTable grow_table({int_col(col::n), int_col(col::d), int_col(col::d_k), int_col(col::p), text_col(col::precision),
                       real_col(col::product_ratio), text_col(col::product_bitwise), real_col(col::bias_product_ratio),
                       real_col(col::rescaled_score_change, true), real_col(col::both_sides_new_score_change, true),
                       real_col(col::zero_padded_new_grad), real_col(col::zero_padded_step_loss_change),
                       real_col(col::one_side_new_grad), real_col(col::one_side_step_loss_change),
                       real_col(col::one_side_first_order_prediction)});
  for (std::size_t j = 0; j < range.size(); ++j) {
    const auto& t = plan.trials[range.begin + j];
    const char* prec = t.single ? "float" : "double";
    bias_table.add_row({t.n, t.d, prec, bias[j].ratio, bias[j].bitwise});
    const auto& g = grow[j];
    grow_table.add_row({t.n, t.growth_d, plan.k, plan.p, prec, g.product_ratio, g.product_bitwise,
                        g.bias_product_ratio,
                        g.rescaled_change, g.both_new_change, g.zero_new_grad, g.zero_step_change, g.one_side_grad,
                        g.one_side_step_change, g.one_side_predicted});
  }
  if (!given.used()) cli.write_table(bias_table, kBiasTable);
  cli.write_table(grow_table, kGrowthTable);
  if (given.used()) return;

  // G7.c's confirming trials, in parallel, each seeded from the confirming seed and its index.
  const auto confirm = confirming_trials(quick);
  const Shard::Range confirm_range = shard.range(confirm.size());
  const std::uint64_t confirm_seed = confirming_seed(seed);
  std::vector<GrowthConfirmed> confirmed(confirm_range.size());
  parallel_trials(confirm_range.size(), [&](std::size_t j) {
    const std::size_t i = confirm_range.begin + j;
    Rng rng(derive_seed(confirm_seed, i));
    const auto& t = confirm[i];
    confirmed[j] = t.single ? growth_confirming<float>(t.n, t.d, t.k, t.p, rng) : growth_confirming<double>(t.n, t.d, t.k, t.p, rng);
  });
  CsvTable confirm_table({int_col(col::n), int_col(col::d), int_col(col::d_k), int_col(col::p), text_col(col::precision),
                          real_col(col::product_ratio), real_col(col::one_side_product_ratio),
                          real_col(col::zero_padded_grad_ratio), real_col(col::rescale_ratio),
                          real_col(col::both_sides_new_score_change)});
  for (std::size_t j = 0; j < confirm_range.size(); ++j) {
    const auto& t = confirm[confirm_range.begin + j];
    const auto& g = confirmed[j];
    confirm_table.add_row({t.n, t.d, t.k, t.p, t.single ? "float" : "double", g.product_ratio, g.one_side_ratio, g.grad_ratio,
                           g.rescale_ratio, g.both_new_change});
  }
  cli.write_table(confirm_table, kGrowthConfirmTable);
}

// G1 from param_counts.csv: the largest spread of a shape's count over its allowed head numbers.
ClaimRow judge_g1(const ExperimentCli& cli, const std::filesystem::path& dir) {
  const TableReader t(dir / kCountsTable);
  G1Tally g1;
  for (std::size_t begin = 0, end = 0; begin < t.rows(); begin = end) {
    // One shape's rows are contiguous: [begin, end).
    auto same_shape = [&](std::size_t i) {
      return t.integer(i, col::d_e) == t.integer(begin, col::d_e) &&
             t.integer(i, col::d_k) == t.integer(begin, col::d_k) &&
             t.integer(i, col::d_v) == t.integer(begin, col::d_v) && t.text(i, col::bias) == t.text(begin, col::bias);
    };
    std::vector<std::int64_t> counts;
    for (end = begin; end < t.rows() && same_shape(end); ++end) counts.push_back(t.integer(end, col::parameters));
    g1.add_shape(counts, kMaxHeads - static_cast<std::int64_t>(counts.size()));
  }
  const Judgement j = g1.judge();
  return {"G1", j.verdict, kG1Metric, j.observed, kCountSpreadThreshold, cli.evidence_path(kCountsTable),
          fmt::format("{} shapes (d_e, d_k, d_v, bias), h in 1..64; h is allowed only when it divides "
                      "both d_k and d_v ({} (shape, h) pairs have no integer head width)",
                      g1.shapes(), g1.disallowed())};
}

// G2 from param_bias.csv: the worst scaled difference of the augmented product against the threshold.
ClaimRow judge_g2(const ExperimentCli& cli, const std::filesystem::path& dir) {
  const TableReader t(dir / kBiasTable);
  double worst_bias = 0;
  int bias_bitwise = 0;
  for (std::size_t i = 0; i < t.rows(); ++i) {
    worst_bias = std::max(worst_bias, t.real(i, col::ratio));
    bias_bitwise += t.text(i, col::bitwise) == "true";
  }
  return {"G2", worst_bias <= kRatioThreshold ? Verdict::holds : Verdict::fails,
          "max entrywise |[X|1][W;b^T] - (XW + 1b^T)| / ((d+1) eps (|X||W| + |b|)), float and double",
          worst_bias, kRatioThreshold, cli.evidence_path(kBiasTable),
          fmt::format("bitwise equal in {}/{} trials", bias_bitwise, t.rows())};
}

// G7 from param_growth.csv. Fixed rule: the product must be unchanged; if S = QK^T/sqrt(d_k) with the
// temperature recomputed at d_k + p also stays unchanged, holds; if only the product does, conditional.
// A ladder of two nested criteria (the second counts only when the first holds), not a verdict per
// condition, so judge_by_condition does not fit it.
ClaimRow judge_g7(const ExperimentCli& cli, const std::filesystem::path& dir) {
  const TableReader t(dir / kGrowthTable);
  double worst_product = 0, max_rescaled = 0, min_rescaled = std::numeric_limits<double>::infinity(), max_zero_grad = 0,
         min_both_new = std::numeric_limits<double>::infinity();
  int product_bitwise = 0, one_side_moves = 0, one_side_trials = 0;
  for (std::size_t i = 0; i < t.rows(); ++i) {
    const double rescaled = t.real(i, col::rescaled_score_change);
    worst_product = std::max({worst_product, t.real(i, col::product_ratio), t.real(i, col::bias_product_ratio)});
    product_bitwise += t.text(i, col::product_bitwise) == "true";
    min_rescaled = std::min(min_rescaled, rescaled);
    max_rescaled = std::max(max_rescaled, rescaled);
    max_zero_grad = std::max(max_zero_grad, t.real(i, col::zero_padded_new_grad));
    min_both_new = std::min(min_both_new, t.real(i, col::both_sides_new_score_change));
    if (t.integer(i, col::n) >= 2) {  // with one token the softmax is constant and every gradient vanishes
      ++one_side_trials;
      one_side_moves += t.real(i, col::one_side_new_grad) > 0 && t.real(i, col::one_side_step_loss_change) < 0;
    }
  }
  ClaimRow c{"G7", Verdict::fails,
             "max ||X W_Q' W_K'^T X^T - X W_Q W_K^T X^T|| / (d eps ||X||^2 ||W_Q|| ||W_K||), float and double, "
             "without and with bias rows",
             worst_product, kRatioThreshold, cli.evidence_path(kGrowthTable), ""};
  const bool product_ok = worst_product <= kRatioThreshold;
  // Unchanged means a relative change at rounding level in the coarser precision (float).
  const bool rescaled_ok = max_rescaled <= kRatioThreshold * std::numeric_limits<float>::epsilon();
  // In full: the product and the scaled scores unchanged; in part: the product only.
  c.verdict = triage(product_ok && rescaled_ok, product_ok);
  c.note = fmt::format(
      "product unchanged (bitwise in {}/{} trials); S = QK^T/sqrt(d_k) changes by >= {:.3g} relative if the "
      "temperature is recomputed at d_k + p, so it holds only with the old 1/sqrt(d_k) kept. Zero columns on "
      "both sides get zero gradient (max {:.3g}): one SGD step leaves the loss unchanged; a random new W_K block "
      "with zero W_Q block keeps S, and one step on the new W_Q columns lowers the loss in {}/{} trials with n >= "
      "2; random blocks on both sides change S by >= {:.3g}",
      product_bitwise, t.rows(), min_rescaled, max_zero_grad, one_side_moves, one_side_trials, min_both_new);
  return c;
}

// G7.c from param_growth_confirm.csv: each part's worst ratio against the threshold, in float and in double.
ClaimRow judge_g7_correction(const ExperimentCli& cli, const std::filesystem::path& dir) {
  const TableReader t(dir / kGrowthConfirmTable);
  WorstByCondition parts;
  double min_both_new = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < t.rows(); ++i) {
    parts.add("product", "zero new columns on both sides (with and without bias rows)", t.real(i, col::product_ratio));
    parts.add("one_side", "zero new columns on one side only", t.real(i, col::one_side_product_ratio));
    parts.add("gradient", "zero gradient of zero-padded columns", t.real(i, col::zero_padded_grad_ratio));
    parts.add("rescale", "S scaled by sqrt(d_k/(d_k + p)) at the new temperature", t.real(i, col::rescale_ratio));
    if (t.integer(i, col::n) >= 2) min_both_new = std::min(min_both_new, t.real(i, col::both_sides_new_score_change));
  }
  std::vector<std::string> worst;
  for (const auto& e : parts.entries()) worst.push_back(fmt::format("{} {:.3g}", e.condition, e.worst));
  std::vector<std::string> growths;
  for (const auto& kp : t.distinct(std::vector<std::string>{col::d_k, col::p})) growths.push_back(fmt::format("({}, {})", kp[0], kp[1]));
  return correction_by_condition("G7.c", parts, cli.evidence_path(kGrowthConfirmTable),
                                 fmt::format("Worst ratios: {}. Random new columns on both sides change S by >= {:.3g} relative "
                                             "(n >= 2). {} trials, (d_k, p) in {{{}}}, n in {{{}}}, seed {}",
                                             fmt::join(worst, ", "), min_both_new, t.rows(), fmt::join(growths, ", "),
                                             fmt::join(t.distinct_integers(col::n), ", "), confirming_seed(cli.options().seed)));
}

// With given weights only param_growth.csv is measured (and the ledger takes no rows from such a run).
std::vector<ClaimRow> judge_growth(const ExperimentCli& cli, const std::filesystem::path& dir) {
  if (cli.uses_given()) return {judge_g7(cli, dir)};
  return {judge_g1(cli, dir), judge_g2(cli, dir), judge_g7(cli, dir), judge_g7_correction(cli, dir)};
}

}  // namespace

int main(int argc, char** argv) {
  ExperimentCli cli("exp_param_growth", "seed 004: parameter counts over h, bias augmentation, zero-padded growth",
                    GivenKind::qk_weights_x);
  cli.footer("With --wq --wk, only the zero-padded growth (G7, param_growth.csv) runs, on those weights: "
                   "the parameter counts and the bias augmentation do not depend on weight values.");
  cli.split_measurement();
  // On given weights G7 forms the scores before and after growth, scaled and not (n x n, n of --x or the sweep's).
  cli.given_memory_need([&cli](const GivenInputs& g) {
    Eigen::Index n = 0;
    for (const Trial& t : trial_plan(cli.options().quick, g).trials) n = std::max(n, t.n);
    return double_matrices(4, n, n, "the scores before and after growth");
  });
  cli.parse(argc, argv);
  return run_experiment(cli, {[&](const Shard& shard) { measure_growth(cli, shard); },
                              [&](const std::filesystem::path& dir) { return judge_growth(cli, dir); }});
}

}  // namespace exp_param_growth
