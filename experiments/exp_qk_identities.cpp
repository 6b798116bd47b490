// R1, R3, R4, R11: the exact identities of seed 000 as scaled residuals, float and double; and the corrected
// statements of R4 and R11 (R4.c, R11.c) on their own confirming sweep.
#include <fmt/format.h>
#include <cmath>
#include <limits>

#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/table_reader.hpp"
#include "attnlab/lab/correction.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/lab/parallel_trials.hpp"
#include "attnlab/lab/qk_weights.hpp"
#include "attnlab/qk/reparameterized_attention.hpp"
#include "attnlab/linalg/residual_ratio.hpp"
#include "attnlab/lab/verdict.hpp"

using namespace attnlab;

namespace exp_qk_identities {  // compiled beside other programs, linked alone (CMakeLists.txt: attnlab_programs)

namespace {

// Column names, spelled once for the tables' writers and their judges (a rename cannot split them).
namespace col {
constexpr const char* d = "d";
constexpr const char* d_k = "d_k";
constexpr const char* family = "family";
constexpr const char* n = "n";
constexpr const char* precision = "precision";
constexpr const char* r11_bound_used = "r11_bound_used";
constexpr const char* r11_excess_ratio = "r11_excess_ratio";
constexpr const char* r11_ratio = "r11_ratio";
constexpr const char* r11_relative_error = "r11_relative_error";
constexpr const char* r1_ratio = "r1_ratio";
constexpr const char* r3_ratio = "r3_ratio";
constexpr const char* r4_diag_ratio = "r4_diag_ratio";
constexpr const char* r4_offdiag_ratio = "r4_offdiag_ratio";
constexpr const char* r4_offdiag_relative = "r4_offdiag_relative";
constexpr const char* r4_skew_ratio = "r4_skew_ratio";
constexpr const char* rep = "rep";
}  // namespace col

constexpr int kQuadraticFormProbes = 8;  // random y per configuration for R3

struct Config {
  std::string family;
  Eigen::Index d, dk, n;
  int rep;
};

struct Measured {
  double r1, r3, r4_diag, r4_off, r4_off_relative, r11_relative, r11;
};

struct Outcome {
  Measured single, dbl;
};

// All four identities on one draw, computed in precision T from the same double data.
template <typename T>
Measured measure(const QkWeights& w64, const Eigen::MatrixXd& x64, const Eigen::MatrixXd& wv64,
                 const Eigen::MatrixXd& y64) {
  const Mat<T> x = x64.cast<T>(), wq = w64.wq.cast<T>(), wk = w64.wk.cast<T>(), wv = wv64.cast<T>();
  const Eigen::Index n = x.rows(), d = x.cols(), dk = wq.cols();
  const double xnorm2 = static_cast<double>(x.squaredNorm());
  Measured m{};

  // R1: (X W_Q)(X W_K)^T against X (W_Q W_K^T) X^T. Both products round with inner
  // lengths up to d, so the error scale is 2d eps ||X||^2 ||W_Q|| ||W_K||.
  const Mat<T> mqk = qk_product(wq, wk);
  const Mat<T> scores = factored_scores(x, wq, wk);
  const Mat<T> merged = merged_scores(x, mqk);
  const double w_scale = static_cast<double>(wq.norm()) * static_cast<double>(wk.norm());
  m.r1 = residual_ratio<T>(static_cast<double>((scores - merged).norm()), 2.0 * d, xnorm2 * w_scale);

  // R3: y^T R_w y with R_w formed; |.| / (d ||R_w|| ||y||^2 eps).
  const Mat<T> rw = skew_part(mqk);
  m.r3 = 0;
  for (Eigen::Index j = 0; j < y64.cols(); ++j) {
    const Vec<T> y = y64.col(j).cast<T>();
    const double q = std::abs(static_cast<double>(y.dot(rw * y)));
    m.r3 = std::max(m.r3, residual_ratio<T>(q, static_cast<double>(d), static_cast<double>(rw.norm()) * static_cast<double>(y.squaredNorm())));
  }

  // R4: X M X^T against X S_w X^T, diagonal (quadratic forms) and off-diagonal apart.
  const Mat<T> sym = merged_scores(x, symmetric_part(mqk));
  Mat<T> diff = merged - sym;
  const double diag = static_cast<double>(diff.diagonal().norm());
  diff.diagonal().setZero();
  const double off = static_cast<double>(diff.norm());
  const double scale = xnorm2 * static_cast<double>(mqk.norm());
  m.r4_diag = residual_ratio<T>(diag, 2.0 * d, scale);
  m.r4_off = residual_ratio<T>(off, 2.0 * d, scale);
  const double merged_norm = static_cast<double>(merged.norm());
  m.r4_off_relative = merged_norm > 0 ? off / merged_norm : 0.0;

  // R11: softmax(X M X^T / sqrt(d_k)) V against softmax(X S_w X^T / sqrt(d_k)) V, V = X W_V.
  // Rounding in the scores, the softmax (row length n) and P V (length n): scale (2d + n) eps.
  const Mat<T> v = x * wv;
  const T inv_sqrt_dk = T(1) / std::sqrt(static_cast<T>(dk));
  const Mat<T> out_std = attention_from_scores<T>(merged, v, inv_sqrt_dk);
  const Mat<T> out_sym = attention_from_scores<T>(sym, v, inv_sqrt_dk);
  const double out_norm = static_cast<double>(out_std.norm());
  m.r11_relative = out_norm > 0 ? static_cast<double>((out_std - out_sym).norm()) / out_norm : 0.0;
  m.r11 = residual_ratio<T>(m.r11_relative, 2.0 * d + n, 1.0);
  return m;
}

// R4.c and R11.c on one draw, in precision T from the same double data.
struct Confirmed {
  double r4_diag = 0, r4_skew = 0, r4_offdiag_relative = 0;  // R4.c, and the size of what differs
  double r11_excess = 0, r11_bound_used = 0, r11_relative = 0;  // R11.c, and how much of the bound is used
};
template <typename T>
Confirmed measure_confirming(const QkWeights& w64, const Eigen::MatrixXd& x64, const Eigen::MatrixXd& wv64) {
  const Mat<T> x = x64.cast<T>(), wq = w64.wq.cast<T>(), wk = w64.wk.cast<T>(), wv = wv64.cast<T>();
  const Eigen::Index n = x.rows(), d = x.cols(), dk = wq.cols();
  const Mat<T> mqk = qk_product(wq, wk);
  const Mat<T> merged = merged_scores(x, mqk), sym = merged_scores(x, symmetric_part(mqk));
  const Mat<T> skew = merged_scores(x, skew_part(mqk));  // A = X R_w X^T
  Confirmed c;

  // R4.c: X M X^T - X S_w X^T is zero on the diagonal and A everywhere; every product rounds as R4's do.
  const double mnorm = static_cast<double>(mqk.norm()), scale = static_cast<double>(x.squaredNorm()) * mnorm;
  Mat<T> diff = merged - sym;
  c.r4_diag = residual_ratio<T>(static_cast<double>(diff.diagonal().norm()), 2.0 * d, scale);
  c.r4_skew = residual_ratio<T>(static_cast<double>((diff - skew).norm()), 2.0 * d, scale);
  diff.diagonal().setZero();
  const double merged_norm = static_cast<double>(merged.norm());
  c.r4_offdiag_relative = merged_norm > 0 ? static_cast<double>(diff.norm()) / merged_norm : 0.0;

  // R11.c: the softmax rows of the two score matrices differ by a shift of A_i / sqrt(d_k), and a shift of range
  // r moves a softmax row by at most r / 2 in l1 (the mean absolute deviation of a variable confined to a range of
  // r is at most r / 2). Rows of P sum to one, so (P - P') V moves by at most half that l1 distance times the
  // largest distance between two rows of V: ||D_i|| <= range_j(A_ij) diam(V) / (4 sqrt(d_k)).
  const Mat<T> v = x * wv;
  const T inv_sqrt_dk = T(1) / std::sqrt(static_cast<T>(dk));
  const Mat<T> out_std = attention_from_scores<T>(merged, v, inv_sqrt_dk);
  const Mat<T> out_sym = attention_from_scores<T>(sym, v, inv_sqrt_dk);
  const Eigen::MatrixXd vd = v.template cast<double>(), xd = x.template cast<double>();
  double diam = 0;
  for (Eigen::Index j = 0; j < n; ++j)
    for (Eigen::Index k = j + 1; k < n; ++k) diam = std::max(diam, (vd.row(j) - vd.row(k)).norm());
  // The largest row norms as sqrt(max ||row||^2): the same numbers, and no vectorised sqrt, whose AVX-512 form GCC 12
  // warns about (-Wuninitialized inside Eigen's psqrt).
  const double v_max = std::sqrt(vd.rowwise().squaredNorm().maxCoeff()), x_max = std::sqrt(xd.rowwise().squaredNorm().maxCoeff());
  const double root_dk = std::sqrt(static_cast<double>(dk));
  for (Eigen::Index i = 0; i < n; ++i) {
    const double moved = (out_std.row(i) - out_sym.row(i)).template cast<double>().norm();
    const double range = static_cast<double>(skew.row(i).maxCoeff()) - static_cast<double>(skew.row(i).minCoeff());
    const double bound = range * diam / (4 * root_dk);
    // Rounding: the softmax and P V of both outputs (row length n, values up to max ||v_j||), and the scores'
    // own rounding (2d eps ||x_i|| ||M|| ||x_j|| each), which the same inequality turns into moves of the rows.
    const double unit = (2.0 * d + n) * v_max + 2.0 * d * xd.row(i).norm() * mnorm * x_max * diam / root_dk;
    c.r11_excess = std::max(c.r11_excess, residual_ratio<T>(std::max(0.0, moved - bound), 1.0, unit));
    // How much of the bound is used, where it is larger than the rounding allowance.
    if (bound > kResidualRatioThreshold * static_cast<double>(std::numeric_limits<T>::epsilon()) * unit)
      c.r11_bound_used = std::max(c.r11_bound_used, moved / bound);
  }
  const double out_norm = static_cast<double>(out_std.norm());
  c.r11_relative = out_norm > 0 ? static_cast<double>((out_std - out_sym).norm()) / out_norm : 0.0;
  return c;
}

// Sequence lengths n tried at width d: the edge lengths 1, 2, 3 and two realistic ones.
std::vector<Eigen::Index> lengths(bool quick, Eigen::Index d) {
  return quick ? std::vector<Eigen::Index>{1, 3, 64}
               : d >= 1024 ? std::vector<Eigen::Index>{3, 512} : std::vector<Eigen::Index>{1, 2, 3, 64, 512};
}

std::vector<Config> sweep(bool quick, const GivenInputs& given) {
  std::vector<Config> configs;
  if (given.used()) {
    // The given weights at their own (d, d_k); X as given, else drawn at the sweep's lengths.
    const Eigen::MatrixXd& wq = given.matrix("wq");
    const std::vector<Eigen::Index> ns =
        given.has("x") ? std::vector<Eigen::Index>{given.matrix("x").rows()} : lengths(quick, wq.rows());
    for (Eigen::Index n : ns) configs.push_back({kGivenFamily, wq.rows(), wq.cols(), n, 0});
    return configs;
  }
  const std::vector<Eigen::Index> dims = quick ? std::vector<Eigen::Index>{16, 64} : std::vector<Eigen::Index>{16, 64, 256, 1024};
  for (const auto& fam : qk_weight_families())
    for (Eigen::Index d : dims) {
      // Edge widths 1, 2, 3, then d/8, d/2, d; the largest d keeps a subset to bound the run.
      std::vector<Eigen::Index> dks = quick ? std::vector<Eigen::Index>{1, 3, d / 2}
                                            : d >= 1024 ? std::vector<Eigen::Index>{1, 3, d / 8}
                                                        : std::vector<Eigen::Index>{1, 2, 3, d / 8, d / 2, d};
      const std::vector<Eigen::Index> ns = lengths(quick, d);
      std::sort(dks.begin(), dks.end());
      dks.erase(std::unique(dks.begin(), dks.end()), dks.end());
      const int reps = quick || d >= 256 ? 1 : 2;
      for (Eigen::Index dk : dks)
        for (Eigen::Index n : ns)
          for (int rep = 0; rep < reps; ++rep) configs.push_back({fam.name, d, dk, n, rep});
    }
  return configs;
}

// The confirming sweep of R4.c and R11.c (lab/correction.hpp): drawn from its own base seed, at widths, head
// dimensions and lengths the sweep above does not use, over its families and one it does not draw.
std::vector<Config> confirming_sweep(bool quick) {
  std::vector<Config> configs;
  for (const auto& fam : qk_confirming_families())
    for (Eigen::Index d : quick ? std::vector<Eigen::Index>{12} : std::vector<Eigen::Index>{12, 40, 160}) {
      std::vector<Eigen::Index> dks = quick ? std::vector<Eigen::Index>{1, d / 4, d} : std::vector<Eigen::Index>{1, 2, d / 4, d};
      std::sort(dks.begin(), dks.end());
      dks.erase(std::unique(dks.begin(), dks.end()), dks.end());
      for (Eigen::Index dk : dks)
        for (Eigen::Index n : quick ? std::vector<Eigen::Index>{1, 2, 20} : std::vector<Eigen::Index>{1, 2, 5, 96})
          configs.push_back({fam.name, d, dk, n, 0});
    }
  return configs;
}

constexpr const char* kTable = "qk_identities.csv";
constexpr const char* kConfirmTable = "qk_identities_confirm.csv";

// Measures the shard's configurations of the confirming sweep and writes their rows (float, then double).
void measure_confirming_sweep(const ExperimentCli& cli, const Shard& shard) {
  const auto configs = confirming_sweep(cli.options().quick);
  const Shard::Range range = shard.range(configs.size());
  const std::uint64_t seed = confirming_seed(cli.options().seed);
  struct Pair {
    Confirmed single, dbl;
  };
  const auto outcomes = run_trials<Pair>(range.size(), "qk identities (confirming)", [&](std::size_t j) {
    const Config& c = configs[range.begin + j];
    Rng rng(derive_seed(seed, range.begin + j));
    const QkWeights w = make_qk_weights(c.family, c.d, c.dk, rng);
    const Eigen::MatrixXd x = gaussian_matrix(c.n, c.d, rng);
    const Eigen::MatrixXd wv = gaussian_matrix(c.d, c.dk, rng, 1.0 / std::sqrt(static_cast<double>(c.d)));
    return Pair{measure_confirming<float>(w, x, wv), measure_confirming<double>(w, x, wv)};
  });
  CsvTable table({text_col(col::family), int_col(col::d), int_col(col::d_k), int_col(col::n), text_col(col::precision),
                  real_col(col::r4_diag_ratio), real_col(col::r4_skew_ratio), real_col(col::r4_offdiag_relative),
                  real_col(col::r11_excess_ratio), real_col(col::r11_bound_used), real_col(col::r11_relative_error)});
  for (std::size_t j = 0; j < range.size(); ++j) {
    const Config& c = configs[range.begin + j];
    for (const auto& [precision, m] : {std::pair{"float", outcomes[j].single}, std::pair{"double", outcomes[j].dbl}})
      table.add_row({c.family, c.d, c.dk, c.n, precision, m.r4_diag, m.r4_skew, m.r4_offdiag_relative, m.r11_excess,
                     m.r11_bound_used, m.r11_relative});
  }
  cli.write_table(table, kConfirmTable);
}

// Measures the shard's configurations of the sweep and writes their rows (float, then double, per configuration).
void measure_identities(const ExperimentCli& cli, const Shard& shard) {
  const auto configs = sweep(cli.options().quick, cli.given());
  const Shard::Range range = shard.range(configs.size());
  const auto outcomes = run_trials<Outcome>(range.size(), "qk identities", [&](std::size_t j) {
    const std::size_t i = range.begin + j;
    const Config& c = configs[i];
    Rng rng(derive_seed(cli.options().seed, i));
    const QkWeights w = cli.uses_given() ? cli.given().qk_weights() : make_qk_weights(c.family, c.d, c.dk, rng);
    const Eigen::MatrixXd x = cli.given().has("x") ? cli.given().matrix("x") : gaussian_matrix(c.n, c.d, rng);
    const Eigen::MatrixXd wv = gaussian_matrix(c.d, c.dk, rng, 1.0 / std::sqrt(static_cast<double>(c.d)));
    const Eigen::MatrixXd y = gaussian_matrix(c.d, kQuadraticFormProbes, rng);
    return Outcome{measure<float>(w, x, wv, y), measure<double>(w, x, wv, y)};
  });

  CsvTable table({text_col(col::family), int_col(col::d), int_col(col::d_k), int_col(col::n), int_col(col::rep),
                  text_col(col::precision), real_col(col::r1_ratio), real_col(col::r3_ratio),
                  real_col(col::r4_diag_ratio), real_col(col::r4_offdiag_ratio), real_col(col::r4_offdiag_relative),
                  real_col(col::r11_relative_error), real_col(col::r11_ratio)});
  for (std::size_t j = 0; j < range.size(); ++j) {
    const Config& c = configs[range.begin + j];
    for (const auto& [precision, m] : {std::pair{"float", outcomes[j].single}, std::pair{"double", outcomes[j].dbl}})
      table.add_row({c.family, c.d, c.dk, c.n, c.rep, precision, m.r1, m.r3, m.r4_diag, m.r4_off, m.r4_off_relative,
                     m.r11_relative, m.r11});
  }
  cli.write_table(table, kTable);
  if (!cli.uses_given()) measure_confirming_sweep(cli, shard);
}

// R1, R3, R4, R11 from the table on disk: each identity's worst ratio per input family against the threshold.
std::vector<ClaimRow> judge_identities(const ExperimentCli& cli, const std::filesystem::path& dir) {
  const TableReader t(dir / kTable);
  WorstByCondition r1, r3, r4, r11;
  for (std::size_t i = 0; i < t.rows(); ++i) {
    const std::string& family = t.text(i, col::family);
    const std::string& desc = qk_family_description(family);
    r1.add(family, desc, t.real(i, col::r1_ratio));
    r3.add(family, desc, t.real(i, col::r3_ratio));
    r4.add(family, desc, std::max(t.real(i, col::r4_diag_ratio), t.real(i, col::r4_offdiag_ratio)));
    r11.add(family, desc, t.real(i, col::r11_ratio));
  }
  const double threshold = kResidualRatioThreshold;
  auto row = [&](const std::string& id, const WorstByCondition& w, const std::string& metric) {
    const Judgement j = judge_by_condition(w, threshold);
    return ClaimRow{id, j.verdict, metric, j.observed, threshold, cli.evidence_path(kTable), j.note};
  };
  return {row("R1", r1, "max scaled residual ||XW_Q(XW_K)^T - X(W_QW_K^T)X^T|| / (2d ||X||^2 ||W_Q|| ||W_K|| eps), float and double"),
          row("R3", r3, "max scaled |y^T R_w y| / (d ||R_w|| ||y||^2 eps) over random y, float and double"),
          row("R4", r4, "max scaled ||X M X^T - X S_w X^T|| (diagonal or off-diagonal) / (2d ||X||^2 ||M|| eps)"),
          row("R11", r11, "max relative attention-output difference / ((2d + n) eps), S_w scores vs W_QW_K^T scores")};
}

// R4.c and R11.c from the confirming sweep's table: each statement's worst ratio per family against its threshold.
std::vector<ClaimRow> judge_corrections(const ExperimentCli& cli, const std::filesystem::path& dir) {
  const TableReader t(dir / kConfirmTable);
  WorstByCondition r4, r11;
  double offdiag = 0, moved = 0, moved_symmetric = 0, bound_used = 0;
  std::string offdiag_family, moved_family;
  for (std::size_t i = 0; i < t.rows(); ++i) {
    const std::string& family = t.text(i, col::family);
    const std::string& desc = qk_family_description(family);
    r4.add(family, desc, std::max(t.real(i, col::r4_diag_ratio), t.real(i, col::r4_skew_ratio)));
    r11.add(family, desc, t.real(i, col::r11_excess_ratio));
    if (t.real(i, col::r4_offdiag_relative) > offdiag) {
      offdiag = t.real(i, col::r4_offdiag_relative);
      offdiag_family = family;
    }
    if (t.real(i, col::r11_relative_error) > moved) {
      moved = t.real(i, col::r11_relative_error);
      moved_family = family;
    }
    if (family == "tied" || family == "symmetric_indefinite" || t.integer(i, col::n) == 1)
      moved_symmetric = std::max(moved_symmetric, t.real(i, col::r11_relative_error));
    bound_used = std::max(bound_used, t.real(i, col::r11_bound_used));
  }
  const std::string sweep = fmt::format("{} configurations x float, double; d in {{{}}}, n in {{{}}}, seed {}", t.rows() / 2,
                                        fmt::join(t.distinct_integers(col::d), ", "), fmt::join(t.distinct_integers(col::n), ", "),
                                        confirming_seed(cli.options().seed));
  auto row = [&](const std::string& id, const WorstByCondition& w, const std::string& extra) {
    return correction_by_condition(id, w, cli.evidence_path(kConfirmTable), extra + " (" + sweep + ")");
  };
  return {row("R4.c", r4,
              fmt::format("Off the diagonal the skew part X R_w X^T is up to {:.3g} of ||X M X^T||_F ({}).", offdiag, offdiag_family)),
          row("R11.c", r11,
              fmt::format("The outputs differ by up to {:.3g} relative ({}), by at most {:.3g} where X R_w X^T = 0 (tied, "
                          "symmetric indefinite, n = 1); the largest move uses {:.3g} of the bound.",
                          moved, moved_family, moved_symmetric, bound_used))};
}

}  // namespace

int main(int argc, char** argv) {
  ExperimentCli cli("exp_qk_identities", "R1, R3, R4, R11: exact identities of the Q-K reparameterization (seed 000)",
                    GivenKind::qk_weights_x);
  cli.split_measurement();
  // On given weights the run forms W_Q W_K^T (d x d) and the scores both ways (n x n, n of --x or the sweep's).
  cli.given_memory_need([&cli](const GivenInputs& g) {
    const Eigen::Index d = g.matrix("wq").rows();
    const std::vector<Eigen::Index> ns = lengths(cli.options().quick, d);
    const Eigen::Index n = g.has("x") ? g.matrix("x").rows() : *std::max_element(ns.begin(), ns.end());
    return double_matrices(1, d, d, "W_Q W_K^T") + double_matrices(2, n, n, "the scores X W_Q (X W_K)^T and X M X^T");
  });
  cli.parse(argc, argv);
  return run_experiment(cli, {[&](const Shard& shard) { measure_identities(cli, shard); },
                              [&](const std::filesystem::path& dir) {
                                std::vector<ClaimRow> rows = judge_identities(cli, dir);
                                if (!cli.uses_given())
                                  for (ClaimRow& c : judge_corrections(cli, dir)) rows.push_back(std::move(c));
                                return rows;
                              }});
}

}  // namespace exp_qk_identities
