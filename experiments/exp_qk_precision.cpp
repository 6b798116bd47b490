// R9: how much rounding the eigen-decomposition route adds to attention scores, float and double.
#include <fmt/format.h>

#include "attnlab/linalg/decompositions.hpp"
#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/table_reader.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/io/ledger.hpp"
#include "attnlab/lab/parallel_trials.hpp"
#include "attnlab/lab/qk_weights.hpp"
#include "attnlab/qk/reparameterized_attention.hpp"
#include "attnlab/core/rng.hpp"
#include "attnlab/lab/statistics.hpp"

using namespace attnlab;

namespace exp_qk_precision {  // compiled beside other programs, linked alone (CMakeLists.txt: attnlab_programs)

namespace {

// Column names, spelled once for the tables' writers and their judges (a rename cannot split them).
namespace col {
constexpr const char* cond_W = "cond_W";
constexpr const char* d = "d";
constexpr const char* d_k = "d_k";
constexpr const char* dense_eig_output_error = "dense_eig_output_error";
constexpr const char* dense_eig_scores_error = "dense_eig_scores_error";
constexpr const char* direct_output_error = "direct_output_error";
constexpr const char* direct_scores_error = "direct_scores_error";
constexpr const char* n = "n";
constexpr const char* precision = "precision";
constexpr const char* qr_eig_output_error = "qr_eig_output_error";
constexpr const char* qr_eig_scores_error = "qr_eig_scores_error";
constexpr const char* rep = "rep";
}  // namespace col

// Rounding "affects the result" when the reparameterized scores carry at least twice
// the relative error of the direct product computed in the same precision.
constexpr double kAmplificationThreshold = 2.0;

struct Config {
  Eigen::Index d, dk, n;
  double cond;
  int rep;
};

struct Errors {
  double direct_scores, dense_scores, qr_scores, direct_output, dense_output, qr_output;
};

// Relative Frobenius error of `approx` against a higher-precision reference.
template <typename T, typename R>
double relative_error(const Mat<T>& approx, const Mat<R>& ref) {
  const Mat<R> diff = approx.template cast<R>() - ref;
  // A zero reference (zero W_Q or W_K given, say) makes the ratio 0/0; the computed scores are then
  // exactly zero as well (every route multiplies by a zero factor), and "no error" is what happened.
  if (ref.norm() == R(0)) {
    if (diff.norm() == R(0)) return 0.0;
    throw std::runtime_error("degenerate input: the reference is zero but the computed result is not (absolute error " +
                             std::to_string(static_cast<double>(diff.norm())) + ")");
  }
  return static_cast<double>(diff.norm() / ref.norm());
}

// Everything in precision T; references in precision R (double for float runs, long
// double for double runs) from the very same T-rounded inputs, so only arithmetic differs.
template <typename T, typename R>
Errors measure(const Eigen::MatrixXd& x64, const Eigen::MatrixXd& wq64, const Eigen::MatrixXd& wk64, const Eigen::MatrixXd& wv64) {
  const Mat<T> x = x64.cast<T>(), wq = wq64.cast<T>(), wk = wk64.cast<T>(), wv = wv64.cast<T>();
  const Mat<R> xr = x.template cast<R>(), wqr = wq.template cast<R>(), wkr = wk.template cast<R>(), wvr = wv.template cast<R>();
  const T scale = T(1) / std::sqrt(static_cast<T>(wq.cols()));
  const R scale_r = R(1) / std::sqrt(static_cast<R>(wq.cols()));

  // References: X M X^T for the direct route, X S_w X^T for the reparameterized one (they
  // differ by the skew part, R4), and the attention outputs of each.
  const Mat<R> mr = qk_product(wqr, wkr);
  const Mat<R> ref_direct = merged_scores(xr, mr);
  const Mat<R> ref_sym = merged_scores(xr, symmetric_part(mr));
  const Mat<R> ref_out_direct = attention_from_scores<R>(ref_direct, xr * wvr, scale_r);
  const Mat<R> ref_out_sym = attention_from_scores<R>(ref_sym, xr * wvr, scale_r);

  const Mat<T> v = x * wv;
  const Mat<T> direct = factored_scores(x, wq, wk);
  const EigenPairs<T> dense = eigen_dense<T>(symmetric_part(qk_product(wq, wk)));
  const EigenPairs<T> low = eigen_low_rank_qr(wq, wk);
  if (dense.status != EigenStatus::ok || low.status != EigenStatus::ok)
    throw std::runtime_error("eigen-decomposition failed: " + (dense.status != EigenStatus::ok ? "dense: " + dense.detail : std::string()) +
                             (dense.status != EigenStatus::ok && low.status != EigenStatus::ok ? "; " : "") +
                             (low.status != EigenStatus::ok ? "low-rank QR: " + low.detail : std::string()));
  const Mat<T> via_dense = reparameterized_scores(x, dense), via_qr = reparameterized_scores(x, low);
  return {relative_error(direct, ref_direct),
          relative_error(via_dense, ref_sym),
          relative_error(via_qr, ref_sym),
          relative_error(attention_from_scores<T>(direct, v, scale), ref_out_direct),
          relative_error(attention_from_scores<T>(via_dense, v, scale), ref_out_sym),
          relative_error(attention_from_scores<T>(via_qr, v, scale), ref_out_sym)};
}

// cond(W) over all singular values: infinite for a rank-deficient W.
double condition_number(const Eigen::MatrixXd& w) {
  const Eigen::VectorXd s = Eigen::JacobiSVD<Eigen::MatrixXd>(w).singularValues();
  return s(s.size() - 1) > 0 ? s(0) / s(s.size() - 1) : std::numeric_limits<double>::infinity();
}

// The sequence length n when X is drawn.
Eigen::Index sweep_length(bool quick) { return quick ? 32 : 128; }

// The sweep: d x d_k x cond(W) x repetition, or the one configuration of the given weights (and X).
std::vector<Config> sweep(bool quick, const GivenInputs& given) {
  const Eigen::Index n = given.has("x") ? given.matrix("x").rows() : sweep_length(quick);
  std::vector<Config> configs;
  if (given.used()) {
    const QkWeights w = given.qk_weights();
    configs.push_back({w.wq.rows(), w.wq.cols(), n, std::max(condition_number(w.wq), condition_number(w.wk)), 0});
  } else {
    for (Eigen::Index d : quick ? std::vector<Eigen::Index>{32} : std::vector<Eigen::Index>{64, 256})
      for (Eigen::Index dk : quick ? std::vector<Eigen::Index>{4, 8} : std::vector<Eigen::Index>{8, 32})
        for (double cond : quick ? std::vector<double>{1, 1e4} : std::vector<double>{1, 1e2, 1e4, 1e6})
          for (int rep = 0; rep < (quick ? 1 : 3); ++rep) configs.push_back({d, dk, n, cond, rep});
  }
  return configs;
}

constexpr const char* kTable = "qk_precision.csv";

// Measures the shard's configurations of the sweep and writes their rows (float, then double, per configuration).
void measure_precision(const ExperimentCli& cli, const Shard& shard) {
  const GivenInputs& given = cli.given();
  const auto configs = sweep(cli.options().quick, given);
  const Shard::Range range = shard.range(configs.size());
  const auto results = run_trials<std::pair<Errors, Errors>>(range.size(), "qk precision", [&](std::size_t j) {
    const std::size_t i = range.begin + j;
    const Config& c = configs[i];
    Rng rng(derive_seed(cli.options().seed, i));
    // W_Q, W_K given or with singular values spread from 1 to 1/cond; X given or gaussian; W_V gaussian.
    Eigen::MatrixXd wq, wk;
    if (given.used()) {
      wq = given.matrix("wq");
      wk = given.matrix("wk");
    } else {
      const Eigen::VectorXd s = geometric_spectrum(c.dk, c.cond);
      wq = matrix_with_singular_values(c.d, c.dk, s, rng);
      wk = matrix_with_singular_values(c.d, c.dk, s, rng);
    }
    const Eigen::MatrixXd x = given.has("x") ? given.matrix("x") : gaussian_matrix(c.n, c.d, rng);
    const Eigen::MatrixXd wv = gaussian_matrix(c.d, c.dk, rng, 1.0 / std::sqrt(static_cast<double>(c.d)));
    return std::pair{measure<float, double>(x, wq, wk, wv), measure<double, long double>(x, wq, wk, wv)};
  });

  CsvTable table({int_col(col::d), int_col(col::d_k), int_col(col::n), real_col(col::cond_W, true), int_col(col::rep),
                  text_col(col::precision), real_col(col::direct_scores_error), real_col(col::dense_eig_scores_error),
                  real_col(col::qr_eig_scores_error), real_col(col::direct_output_error),
                  real_col(col::dense_eig_output_error), real_col(col::qr_eig_output_error)});
  for (std::size_t j = 0; j < range.size(); ++j) {
    const Config& c = configs[range.begin + j];
    for (const auto& [precision, e] : {std::pair{"float", results[j].first}, std::pair{"double", results[j].second}})
      table.add_row({c.d, c.dk, c.n, c.cond, c.rep, precision, e.direct_scores, e.dense_scores, e.qr_scores,
                     e.direct_output, e.dense_output, e.qr_output});
  }
  cli.write_table(table, kTable);
}

// R9 from the table on disk: the largest amplification of the eigen routes' score error over the direct
// product's. A claim of one direction ("rounding affects the result"): holds at or above the threshold,
// fails below it; no condition splits it.
std::vector<ClaimRow> judge_precision(const ExperimentCli& cli, const std::filesystem::path& dir) {
  const TableReader t(dir / kTable);
  double worst = 0;
  std::string worst_where;
  for (std::size_t i = 0; i < t.rows(); ++i) {
    const double direct = t.real(i, col::direct_scores_error), dense = t.real(i, col::dense_eig_scores_error),
                 qr = t.real(i, col::qr_eig_scores_error);
    const double amp = std::max(dense, qr) / direct;
    if (amp > worst) {
      worst = amp;
      worst_where =
          fmt::format("{} at d = {}, d_k = {}, cond(W) = {:g} (direct {:.2g}, dense-eig route {:.2g}, QR route {:.2g})",
                      t.text(i, col::precision), t.integer(i, col::d), t.integer(i, col::d_k), t.real(i, col::cond_W),
                      direct, dense, qr);
    }
  }
  const bool affects = worst >= kAmplificationThreshold;
  return {ClaimRow{"R9", affects ? Verdict::holds : Verdict::fails,
                   "max over configurations of (relative score error of the eigen route) / (relative error of the direct product), same precision",
                   worst, kAmplificationThreshold, cli.evidence_path(kTable), "largest amplification: " + worst_where}};
}

}  // namespace

int main(int argc, char** argv) {
  ExperimentCli cli("exp_qk_precision", "R9: rounding of the eigen-decomposition route vs the direct product (seed 000)",
                    GivenKind::qk_weights_x);
  cli.split_measurement();
  // On given weights the run forms the scores and their reference (n x n, n of --x or the sweep's).
  cli.given_memory_need([&cli](const GivenInputs& g) {
    const Eigen::Index n = g.has("x") ? g.matrix("x").rows() : sweep_length(cli.options().quick);
    return double_matrices(2, n, n, "the scores X M X^T and their reference");
  });
  cli.parse(argc, argv);
  return run_experiment(cli, {[&](const Shard& shard) { measure_precision(cli, shard); },
                              [&](const std::filesystem::path& dir) { return judge_precision(cli, dir); }});
}

}  // namespace exp_qk_precision
