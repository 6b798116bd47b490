// R2, R5, R6, R10: the rank and spectrum of W_Q W_K^T and S_w, float and double; and the corrected statements of
// R5, R6 and R10 (R5.c, R6.c, R10.c) on their own confirming sweep.
#include <fmt/format.h>
#include <map>

#include "attnlab/linalg/decompositions.hpp"
#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/table_reader.hpp"
#include "attnlab/lab/correction.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/linalg/numerical_rank.hpp"
#include "attnlab/lab/parallel_trials.hpp"
#include "attnlab/lab/qk_weights.hpp"
#include "attnlab/linalg/residual_ratio.hpp"
#include "attnlab/qk/sym_eigen.hpp"
#include "attnlab/lab/verdict.hpp"
#include "attnlab/lab/weight_claims.hpp"

using namespace attnlab;

namespace exp_qk_spectrum {  // compiled beside other programs, linked alone (CMakeLists.txt: attnlab_programs)

namespace {

// Column names, spelled once for the tables' writers and their judges (a rename cannot split them).
namespace col {
constexpr const char* d = "d";
constexpr const char* d_k = "d_k";
constexpr const char* eig_orthogonality_ratio = "eig_orthogonality_ratio";
constexpr const char* eig_residual_ratio = "eig_residual_ratio";
constexpr const char* family = "family";
constexpr const char* negative_eig_S = "negative_eig_S";
constexpr const char* nonzero_eig_S = "nonzero_eig_S";
constexpr const char* positive_eig_S = "positive_eig_S";
constexpr const char* precision = "precision";
constexpr const char* r10_pythagoras_ratio = "r10_pythagoras_ratio";
constexpr const char* r10_random_norm_kept = "r10_random_norm_kept";
constexpr const char* r10_ratio_random_y = "r10_ratio_random_y";
constexpr const char* r10_ratio_y_in_span = "r10_ratio_y_in_span";
constexpr const char* r6_ratio_all_pairs = "r6_ratio_all_pairs";
constexpr const char* r6_ratio_dk_pairs = "r6_ratio_dk_pairs";
constexpr const char* rank_M = "rank_M";
constexpr const char* split_ratio = "split_ratio";
}  // namespace col

constexpr int kProbes = 8;  // random y per configuration for R6 and R10

struct Config {
  std::string family;
  Eigen::Index d, dk;
};

struct Measured {
  Eigen::Index rank_m = 0, nonzero_s = 0, positive_s = 0, negative_s = 0;
  double eig_residual = 0, eig_orthogonality = 0;  // checks of the QR-path decomposition used below
  double r6_dk = 0, r6_all = 0;                    // quadratic form with d_k pairs / all nonzero pairs
  double r10_random = 0, r10_in_span = 0;          // | ||U^T y|| - ||y|| | / (d ||y|| eps)
  // Measured for the corrected statements (the confirming sweep's table only):
  double split_ratio = 0;            // R5.c: ||S_w - (A A^T - B B^T)/4||, A = W_Q + W_K, B = W_Q - W_K
  double r10_pythagoras = 0;         // R10.c: | ||U^T y||^2 + ||y - U U^T y||^2 - ||y||^2 | / (d ||y||^2 eps)
  double r10_random_kept = 1;        // R10.c's note: the smallest ||U^T y|| / ||y|| over random y
};

struct Outcome {
  Measured single, dbl;
};

template <typename T>
Measured measure(const QkWeights& w64, const Eigen::MatrixXd& y64) {
  const Mat<T> wq = w64.wq.cast<T>(), wk = w64.wk.cast<T>();
  const Eigen::Index d = wq.rows(), dk = wq.cols();
  Measured m;

  // R2: numerical rank of the formed M (SVD, tolerance max(d, d) eps sigma_max).
  const Mat<T> mqk = qk_product(wq, wk);
  m.rank_m = numerical_rank(mqk);

  // R5: nonzero eigenvalues of the formed S_w from the dense solver (the oracle), with
  // the same relative tolerance d eps max|lambda|; signs counted among the nonzero ones.
  const Mat<T> s = symmetric_part(mqk);
  const Vec<T> lambda = Eigen::SelfAdjointEigenSolver<Mat<T>>(s, Eigen::EigenvaluesOnly).eigenvalues();
  const EigenvalueSigns signs = count_eigenvalue_signs(lambda, d);
  m.nonzero_s = signs.nonzero;
  m.positive_s = signs.positive;
  m.negative_s = signs.negative;
  // R5.c: S_w = (A A^T - B B^T)/4, a difference of two positive semidefinite matrices of rank <= d_k each, which
  // bounds each sign's count by d_k. Both sides are sums of d_k products of entries up to those of A and B.
  const Mat<T> a = wq + wk, b = wq - wk;
  const Mat<T> split = T(0.25) * (a * a.transpose() - b * b.transpose());
  const double ab = static_cast<double>(wq.norm()) + static_cast<double>(wk.norm());
  m.split_ratio = residual_ratio<T>(static_cast<double>((s - split).norm()), 2.0 * static_cast<double>(dk), ab * ab);

  // The decomposition the claims use, by the low-rank path; its backward errors are recorded.
  const EigenPairs<T> all = eigen_low_rank_qr(wq, wk);
  m.eig_residual = eigen_residual_ratio(wq, wk, all);
  m.eig_orthogonality = orthogonality_ratio(all.vectors);
  const EigenPairs<T> lead = leading_pairs(all, dk);
  const double s_norm = symmetric_part_norm(wq, wk);

  for (Eigen::Index j = 0; j < y64.cols(); ++j) {
    const Vec<T> y = y64.col(j).cast<T>();
    const double y2 = static_cast<double>(y.squaredNorm());
    // R6: y^T M y, exact reference in double from the factors: (W_Q^T y) . (W_K^T y).
    const Eigen::VectorXd yd = y.template cast<double>();
    const double exact = (w64.wq.transpose() * yd).dot(w64.wk.transpose() * yd);
    auto quad = [&](const EigenPairs<T>& p) {
      const Vec<T> c = p.vectors.transpose() * y;
      return static_cast<double>((p.values.array() * c.array().square()).sum());
    };
    m.r6_dk = std::max(m.r6_dk, residual_ratio<T>(std::abs(quad(lead) - exact), static_cast<double>(d), s_norm * y2));
    m.r6_all = std::max(m.r6_all, residual_ratio<T>(std::abs(quad(all) - exact), static_cast<double>(d), s_norm * y2));

    // R10: ||U^T y|| against ||y|| for U the d x d_k leading eigenvectors, y random and
    // y = U c inside U's span.
    auto norm_gap = [&](const Vec<T>& v) {
      const double gap = std::abs(static_cast<double>((lead.vectors.transpose() * v).norm()) - static_cast<double>(v.norm()));
      return residual_ratio<T>(gap, static_cast<double>(d), static_cast<double>(v.norm()));
    };
    m.r10_random = std::max(m.r10_random, norm_gap(y));
    // R10.c: Pythagoras for U^T y and the part of y outside span(U), which U^T drops.
    const Vec<T> c = lead.vectors.transpose() * y;
    const Vec<T> outside = y - lead.vectors * c;
    const double split_gap = std::abs(static_cast<double>(c.squaredNorm()) + static_cast<double>(outside.squaredNorm()) - y2);
    m.r10_pythagoras = std::max(m.r10_pythagoras, residual_ratio<T>(split_gap, static_cast<double>(d), y2));
    m.r10_random_kept = std::min(m.r10_random_kept, static_cast<double>(c.norm()) / std::sqrt(y2));
    const Vec<T> in_span = lead.vectors * y.head(lead.vectors.cols());
    m.r10_in_span = std::max(m.r10_in_span, norm_gap(in_span));
  }
  return m;
}

std::vector<Config> sweep(bool quick, const GivenInputs& given) {
  // The given weights replace the families and sizes with their own (d, d_k).
  if (given.used()) return {{kGivenFamily, given.matrix("wq").rows(), given.matrix("wq").cols()}};
  std::vector<Config> configs;
  const std::vector<Eigen::Index> dims = quick ? std::vector<Eigen::Index>{16, 48} : std::vector<Eigen::Index>{16, 64, 256, 1024};
  for (const auto& fam : qk_weight_families())
    for (Eigen::Index d : dims) {
      std::vector<Eigen::Index> dks = quick ? std::vector<Eigen::Index>{1, 2, d / 4, d}
                                            : d >= 1024 ? std::vector<Eigen::Index>{1, d / 8}
                                                        : std::vector<Eigen::Index>{1, 2, 3, d / 8, d / 4, d / 2, d};
      std::sort(dks.begin(), dks.end());
      dks.erase(std::unique(dks.begin(), dks.end()), dks.end());
      for (Eigen::Index dk : dks) configs.push_back({fam.name, d, dk});
    }
  return configs;
}

// The confirming sweep of R5.c, R6.c and R10.c (lab/correction.hpp): drawn from its own base seed, at widths and
// head dimensions the sweep above does not use (3 d / 4 among them: 2 d_k > d with d_k < d), over its families and
// one it does not draw.
std::vector<Config> confirming_sweep(bool quick) {
  std::vector<Config> configs;
  for (const auto& fam : qk_confirming_families())
    for (Eigen::Index d : quick ? std::vector<Eigen::Index>{12} : std::vector<Eigen::Index>{12, 40, 160}) {
      std::vector<Eigen::Index> dks = quick ? std::vector<Eigen::Index>{1, d / 4, 3 * d / 4, d}
                                            : std::vector<Eigen::Index>{1, 2, d / 4, 3 * d / 4, d};
      std::sort(dks.begin(), dks.end());
      dks.erase(std::unique(dks.begin(), dks.end()), dks.end());
      for (Eigen::Index dk : dks) configs.push_back({fam.name, d, dk});
    }
  return configs;
}

constexpr const char* kTable = "qk_spectrum.csv";
constexpr const char* kConfirmTable = "qk_spectrum_confirm.csv";

// Measures the shard's configurations of the confirming sweep and writes their rows (float, then double).
void measure_confirming_sweep(const ExperimentCli& cli, const Shard& shard) {
  const auto configs = confirming_sweep(cli.options().quick);
  const Shard::Range range = shard.range(configs.size());
  const std::uint64_t seed = confirming_seed(cli.options().seed);
  const auto outcomes = run_trials<Outcome>(range.size(), "qk spectrum (confirming)", [&](std::size_t j) {
    const Config& c = configs[range.begin + j];
    Rng rng(derive_seed(seed, range.begin + j));
    const QkWeights w = make_qk_weights(c.family, c.d, c.dk, rng);
    const Eigen::MatrixXd y = gaussian_matrix(c.d, kProbes, rng);
    return Outcome{measure<float>(w, y), measure<double>(w, y)};
  });
  CsvTable table({text_col(col::family), int_col(col::d), int_col(col::d_k), text_col(col::precision),
                  int_col(col::nonzero_eig_S), int_col(col::positive_eig_S), int_col(col::negative_eig_S),
                  real_col(col::split_ratio), real_col(col::eig_residual_ratio), real_col(col::eig_orthogonality_ratio),
                  real_col(col::r6_ratio_dk_pairs), real_col(col::r6_ratio_all_pairs), real_col(col::r10_pythagoras_ratio),
                  real_col(col::r10_ratio_y_in_span), real_col(col::r10_random_norm_kept)});
  for (std::size_t j = 0; j < range.size(); ++j) {
    const Config& c = configs[range.begin + j];
    for (const auto& [precision, m] : {std::pair{"float", outcomes[j].single}, std::pair{"double", outcomes[j].dbl}})
      table.add_row({c.family, c.d, c.dk, precision, m.nonzero_s, m.positive_s, m.negative_s, m.split_ratio, m.eig_residual,
                     m.eig_orthogonality, m.r6_dk, m.r6_all, m.r10_pythagoras, m.r10_in_span, m.r10_random_kept});
  }
  cli.write_table(table, kConfirmTable);
}

// Measures the shard's configurations of the sweep and writes their rows (float, then double, per configuration).
void measure_spectrum(const ExperimentCli& cli, const Shard& shard) {
  const auto configs = sweep(cli.options().quick, cli.given());
  const Shard::Range range = shard.range(configs.size());
  const auto outcomes = run_trials<Outcome>(range.size(), "qk spectrum", [&](std::size_t j) {
    const std::size_t i = range.begin + j;
    const Config& c = configs[i];
    Rng rng(derive_seed(cli.options().seed, i));
    const QkWeights w = cli.uses_given() ? cli.given().qk_weights() : make_qk_weights(c.family, c.d, c.dk, rng);
    const Eigen::MatrixXd y = gaussian_matrix(c.d, kProbes, rng);
    return Outcome{measure<float>(w, y), measure<double>(w, y)};
  });

  CsvTable table(
      {text_col(col::family), int_col(col::d), int_col(col::d_k), text_col(col::precision), int_col(col::rank_M),
       int_col(col::nonzero_eig_S), int_col(col::positive_eig_S), int_col(col::negative_eig_S),
       real_col(col::eig_residual_ratio), real_col(col::eig_orthogonality_ratio), real_col(col::r6_ratio_dk_pairs),
       real_col(col::r6_ratio_all_pairs), real_col(col::r10_ratio_random_y), real_col(col::r10_ratio_y_in_span)});
  for (std::size_t j = 0; j < range.size(); ++j) {
    const Config& c = configs[range.begin + j];
    for (const auto& [precision, m] : {std::pair{"float", outcomes[j].single}, std::pair{"double", outcomes[j].dbl}})
      table.add_row({c.family, c.d, c.dk, precision, m.rank_m, m.nonzero_s, m.positive_s, m.negative_s,
                     m.eig_residual, m.eig_orthogonality, m.r6_dk, m.r6_all, m.r10_random, m.r10_in_span});
  }
  cli.write_table(table, kTable);
  if (!cli.uses_given()) measure_confirming_sweep(cli, shard);
}

// R2, R5, R6, R10 from the table on disk, after the QR-path decomposition's own check on every row.
std::vector<ClaimRow> judge_spectrum(const ExperimentCli& cli, const std::filesystem::path& dir) {
  const TableReader t(dir / kTable);
  WorstByCondition r2, r5, r6, r10;
  double worst_check = 0, r6_all_worst = 0;
  for (std::size_t i = 0; i < t.rows(); ++i) {
    const std::string& family = t.text(i, col::family);
    const std::string& desc = qk_family_description(family);
    const std::int64_t d = t.integer(i, col::d), dk_count = t.integer(i, col::d_k);
    const double dk = static_cast<double>(dk_count);
    r2.add(family, desc, static_cast<double>(t.integer(i, col::rank_M)) / dk);
    r5.add(family, desc, static_cast<double>(t.integer(i, col::nonzero_eig_S)) / dk);
    r6.add(family, desc, t.real(i, col::r6_ratio_dk_pairs));
    r6_all_worst = std::max(r6_all_worst, t.real(i, col::r6_ratio_all_pairs));
    const double r10_random = t.real(i, col::r10_ratio_random_y), r10_in_span = t.real(i, col::r10_ratio_y_in_span);
    // R10's condition is where y lies and whether U is square, not the weight family.
    if (dk_count == d) r10.add("square", "square U (d_k = d)", std::max(r10_random, r10_in_span));
    else {
      r10.add("in_span", "y in the span of U", r10_in_span);
      r10.add("random", "random y with d_k < d (y outside span(U))", r10_random);
    }
    worst_check = std::max({worst_check, t.real(i, col::eig_residual_ratio), t.real(i, col::eig_orthogonality_ratio)});
  }
  if (!(worst_check <= kResidualRatioThreshold))
    throw std::runtime_error(fmt::format("the QR-path eigen-decomposition failed its own check (worst ratio {}); see {}",
                                         worst_check, kTable));

  auto row = [&](const std::string& id, const WorstByCondition& w, double threshold, const std::string& metric,
                 const std::string& extra = "") {
    Judgement j = judge_by_condition(w, threshold);
    if (!extra.empty()) j.note += (j.note.empty() ? "" : " ") + extra;
    return ClaimRow{id, j.verdict, metric, j.observed, threshold, cli.evidence_path(kTable), j.note};
  };
  return {row("R2", r2, kCountRatioThreshold, kR2Metric), row("R5", r5, kCountRatioThreshold, kR5Metric, kR5Note),
          row("R6", r6, kResidualRatioThreshold,
              "max scaled |y^T M y - sum_{i<=d_k} lambda_i (u_i^T y)^2| / (d ||S_w|| ||y||^2 eps)",
              fmt::format("Keeping all nonzero eigenpairs (up to 2 d_k) instead gives a worst ratio of {:.3g}.", r6_all_worst)),
          row("R10", r10, kResidualRatioThreshold, "max scaled | ||U^T y|| - ||y|| | / (d ||y|| eps), U = d x d_k leading eigenvectors")};
}

// R5.c, R6.c, R10.c from the confirming sweep's table, after the QR-path decomposition's own check on every row:
// each statement's worst value per family against its threshold.
std::vector<ClaimRow> judge_corrections(const ExperimentCli& cli, const std::filesystem::path& dir) {
  const TableReader t(dir / kConfirmTable);
  WorstByCondition r5, r6, r10;
  double worst_check = 0, r6_dk_elsewhere = 0, kept = 1;
  std::map<std::string, std::pair<int, int>> reached;  // by family: rows with min(2 d_k, d) nonzero eigenvalues, rows
  for (std::size_t i = 0; i < t.rows(); ++i) {
    const std::string& family = t.text(i, col::family);
    const std::string& desc = qk_family_description(family);
    const std::int64_t d = t.integer(i, col::d), dk = t.integer(i, col::d_k), nonzero = t.integer(i, col::nonzero_eig_S);
    const double dkr = static_cast<double>(dk);
    r5.add(family, desc,
           std::max({static_cast<double>(t.integer(i, col::positive_eig_S)) / dkr,
                     static_cast<double>(t.integer(i, col::negative_eig_S)) / dkr,
                     static_cast<double>(nonzero) / static_cast<double>(std::min(2 * dk, d)),
                     t.real(i, col::split_ratio) / kResidualRatioThreshold}));
    auto& [hit, rows] = reached[family];
    hit += nonzero == std::min(2 * dk, d);
    ++rows;
    const double r6_dk = t.real(i, col::r6_ratio_dk_pairs);
    r6.add(family, desc, std::max(t.real(i, col::r6_ratio_all_pairs), nonzero <= dk ? r6_dk : 0.0));
    if (nonzero > dk) r6_dk_elsewhere = std::max(r6_dk_elsewhere, r6_dk);
    r10.add(family, desc, std::max(t.real(i, col::r10_pythagoras_ratio), t.real(i, col::r10_ratio_y_in_span)));
    if (dk < d) kept = std::min(kept, t.real(i, col::r10_random_norm_kept));
    worst_check = std::max({worst_check, t.real(i, col::eig_residual_ratio), t.real(i, col::eig_orthogonality_ratio)});
  }
  if (!(worst_check <= kResidualRatioThreshold))
    throw std::runtime_error(fmt::format("the QR-path eigen-decomposition failed its own check (worst ratio {}); see {}",
                                         worst_check, kConfirmTable));
  std::vector<std::string> reach;
  for (const auto& family : t.distinct(col::family))
    reach.push_back(fmt::format("{} {}/{}", family, reached[family].first, reached[family].second));
  const std::string sweep = fmt::format("{} configurations x float, double; d in {{{}}}, seed {}", t.rows() / 2,
                                        fmt::join(t.distinct_integers(col::d), ", "), confirming_seed(cli.options().seed));
  auto row = [&](const std::string& id, const WorstByCondition& w, const std::string& extra) {
    return correction_by_condition(id, w, cli.evidence_path(kConfirmTable), extra + " (" + sweep + ")");
  };
  return {row("R5.c", r5, fmt::format("Rows with exactly min(2 d_k, d) nonzero eigenvalues: {}.", fmt::join(reach, "; "))),
          row("R6.c", r6,
              fmt::format("With the d_k leading pairs where S_w has more than d_k nonzero eigenvalues: ratio up to {:.3g}.",
                          r6_dk_elsewhere)),
          row("R10.c", r10, fmt::format("For d_k < d, random y keep as little as {:.3g} of their norm under U^T.", kept))};
}

}  // namespace

int main(int argc, char** argv) {
  ExperimentCli cli("exp_qk_spectrum", "R2, R5, R6, R10: rank and spectrum of W_Q W_K^T and S_w (seed 000)",
                    GivenKind::qk_weights);
  cli.split_measurement();
  // On given weights the run forms W_Q W_K^T and S_w (d x d), in double as in float.
  cli.given_memory_need([](const GivenInputs& g) {
    return double_matrices(2, g.matrix("wq").rows(), g.matrix("wq").rows(), "W_Q W_K^T and S_w");
  });
  cli.parse(argc, argv);
  return run_experiment(cli, {[&](const Shard& shard) { measure_spectrum(cli, shard); },
                              [&](const std::filesystem::path& dir) {
                                std::vector<ClaimRow> rows = judge_spectrum(cli, dir);
                                if (!cli.uses_given())
                                  for (ClaimRow& c : judge_corrections(cli, dir)) rows.push_back(std::move(c));
                                return rows;
                              }});
}

}  // namespace exp_qk_spectrum
