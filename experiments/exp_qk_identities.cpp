// R1, R3, R4, R11: the exact identities of seed 000 as scaled residuals, float and double.
#include <fmt/format.h>

#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/table_reader.hpp"
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
constexpr const char* r11_ratio = "r11_ratio";
constexpr const char* r11_relative_error = "r11_relative_error";
constexpr const char* r1_ratio = "r1_ratio";
constexpr const char* r3_ratio = "r3_ratio";
constexpr const char* r4_diag_ratio = "r4_diag_ratio";
constexpr const char* r4_offdiag_ratio = "r4_offdiag_ratio";
constexpr const char* r4_offdiag_relative = "r4_offdiag_relative";
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

constexpr const char* kTable = "qk_identities.csv";

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
                              [&](const std::filesystem::path& dir) { return judge_identities(cli, dir); }});
}

}  // namespace exp_qk_identities
