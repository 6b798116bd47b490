// L4: the Linformer explainer's (seed 003) conceptual PyTorch module, traced and run layer for layer.
#include <chrono>
#include <fmt/format.h>
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/table_reader.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/io/ledger.hpp"
#include "attnlab/attention/linformer_snippet.hpp"
#include "attnlab/attention/multihead_layer.hpp"
#include "attnlab/linalg/residual_ratio.hpp"
#include "attnlab/lab/correction.hpp"

using namespace attnlab;

namespace exp_linformer_snippet {  // compiled beside other programs, linked alone (CMakeLists.txt: attnlab_programs)

namespace {

// Column names, spelled once for the tables' writers and their judges (a rename cannot split them).
namespace col {
constexpr const char* batch = "batch";
constexpr const char* case_name = "case";
constexpr const char* corrected_output_shape_matches_input = "corrected_output_shape_matches_input";
constexpr const char* corrected_runs = "corrected_runs";
constexpr const char* dim = "dim";
constexpr const char* error = "error";
constexpr const char* failing_step = "failing_step";
constexpr const char* heads = "heads";
constexpr const char* k = "k";
constexpr const char* multiply_adds = "multiply_adds";
constexpr const char* numeric_output_finite = "numeric_output_finite";
constexpr const char* numeric_output_shape = "numeric_output_shape";
constexpr const char* operation = "operation";
constexpr const char* precision = "precision";
constexpr const char* predicted_to_run = "predicted_to_run";
constexpr const char* output_shape = "output_shape";
constexpr const char* output_shape_matches_input = "output_shape_matches_input";
constexpr const char* proj_in_features = "proj_in_features";
constexpr const char* residual_ratio = "residual_ratio";
constexpr const char* result = "result";
constexpr const char* run_numerically = "run_numerically";
constexpr const char* runs = "runs";
constexpr const char* seconds = "seconds";
constexpr const char* seq_len = "seq_len";
constexpr const char* step = "step";
}  // namespace col

struct Case {
  std::string name;
  SnippetConfig config;
  bool run_numerically;
};

// Output of one numeric forward pass in training mode (the module's state after construction).
struct Run {
  bool finite = false;
  std::string shape;
  double seconds = 0;
};

Run run_forward(const SnippetConfig& c, std::uint64_t seed) {
  Rng rng(seed);
  const auto w = snippet_default_weights(c, rng).cast<float>();  // torch's default dtype is float32
  HeadStack<float> x(c.batch, 1, c.seq_len, c.dim);
  for (Eigen::Index b = 0; b < c.batch; ++b) x[b] = gaussian_matrix<float>(c.seq_len, c.dim, rng);  // torch.randn
  const auto t0 = std::chrono::steady_clock::now();
  const HeadStack<float> y = snippet_forward(c, w, x, true, derive_seed(seed, 1));
  Run r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.finite = true;
  for (Eigen::Index b = 0; b < y.batch(); ++b) r.finite = r.finite && y[b].allFinite();
  r.shape = shape_string({y.batch(), y.n(), y.d()});
  return r;
}

// The corrected module in eval mode with zero projection biases against our multi-head layer with
// Linformer heads (E = proj_k.weight, F = proj_v.weight), in precision T: the scaled residual.
template <typename T>
double agreement_with_library(const SnippetConfig& c, std::uint64_t seed) {
  Rng rng(seed);
  SnippetWeights<double> sd = snippet_default_weights(c, rng);
  sd.proj_k_bias.setZero();
  sd.proj_v_bias.setZero();
  HeadStack<double> xd(c.batch, 1, c.seq_len, c.dim);
  for (Eigen::Index b = 0; b < c.batch; ++b) xd[b] = gaussian_matrix(c.seq_len, c.dim, rng);
  const SnippetWeights<T> sw = sd.template cast<T>();
  HeadStack<T> x(c.batch, 1, c.seq_len, c.dim);
  for (Eigen::Index b = 0; b < c.batch; ++b) x[b] = xd[b].template cast<T>();
  const HeadStack<T> got = snippet_forward(c, sw, x, false, 0);
  const MultiheadWeights<T> w{sw.to_q.transpose(), sw.to_k.transpose(), sw.to_v.transpose(), sw.to_out.transpose(),
                              sw.to_out_bias, c.heads};
  const HeadStack<T> want = multihead_layer(x, w, linformer_head_attention<T>({sw.proj_k, sw.proj_v}));
  double worst = 0;
  for (Eigen::Index b = 0; b < c.batch; ++b)
    worst = std::max(worst, residual_ratio<T>(static_cast<double>((got[b] - want[b]).norm()), static_cast<double>(c.seq_len),
                                              static_cast<double>(want[b].norm())));
  return worst;
}

constexpr const char* kTraceTable = "linformer_snippet_trace.csv";
constexpr const char* kSummaryTable = "linformer_snippet.csv";
constexpr const char* kTimingTable = "linformer_snippet_timing.csv";
constexpr const char* kDocumentedCase = "as_written_documented_shapes";
constexpr const char* kShapesConfirmTable = "linformer_snippet_shapes_confirm.csv";
constexpr const char* kAgreementConfirmTable = "linformer_snippet_agreement_confirm.csv";

std::vector<Case> make_cases(bool quick) {
  // The usage example's shapes; the trace is shapes only and costs nothing, so it runs in --quick too.
  std::vector<Case> cases{
      {kDocumentedCase, snippet_as_written(4, 4096, 512, 8, 256), false},
      // nn.Linear(dim_head, k) on the sequence axis: runs only when seq_len == dim_head.
      {"as_written_seq_len_equals_dim_head", snippet_as_written(4, 64, 512, 8, 256), !quick},
      {"corrected_documented_shapes", snippet_corrected(4, 4096, 512, 8, 256), !quick},
  };
  if (quick) {
    cases.push_back({"as_written_seq_len_equals_dim_head_small", snippet_as_written(1, 16, 64, 4, 32), true});
    cases.push_back({"corrected_small", snippet_corrected(1, 256, 64, 4, 32), true});
  }
  return cases;
}

// Traces (and, where the case says so and the trace ran, runs) the shard's cases; case i runs from
// derive_seed(seed, i). The seconds of a forward pass are recorded, not fitted, so the timing table is
// sharded with its cases. The library cross-check is a sweep of one, run by the shard whose block holds it.
void measure_snippet(const ExperimentCli& cli, const Shard& shard) {
  const std::vector<Case> cases = make_cases(cli.options().quick);
  const Shard::Range range = shard.range(cases.size());
  CsvTable trace({text_col(col::case_name), int_col(col::step), text_col(col::operation), text_col(col::result)});
  CsvTable summary({text_col(col::case_name), int_col(col::batch), int_col(col::seq_len), int_col(col::dim),
                    int_col(col::heads), int_col(col::k), int_col(col::proj_in_features), text_col(col::runs),
                    text_col(col::failing_step), text_col(col::error), text_col(col::output_shape),
                    text_col(col::output_shape_matches_input), text_col(col::run_numerically),
                    text_col(col::numeric_output_shape), text_col(col::numeric_output_finite),
                    real_col(col::multiply_adds)});
  CsvTable timing({text_col(col::case_name), real_col(col::seconds), real_col(col::multiply_adds)});
  for (std::size_t i = range.begin; i < range.end; ++i) {
    const auto& cs = cases[i];
    const SnippetTrace t = trace_snippet(cs.config);
    for (std::size_t s = 0; s < t.steps.size(); ++s)
      trace.add_row({cs.name, static_cast<long>(s), t.steps[s].operation,
                     t.steps[s].shape.empty() && s + 1 == t.steps.size() && !t.ran ? "RuntimeError: " + t.error
                                                                                   : shape_string(t.steps[s].shape)});
    Run r;
    if (cs.run_numerically && t.ran) {
      r = run_forward(cs.config, derive_seed(cli.options().seed, i));
      timing.add_row({cs.name, r.seconds, snippet_multiply_adds(cs.config)});
    }
    summary.add_row({cs.name, cs.config.batch, cs.config.seq_len, cs.config.dim, cs.config.heads, cs.config.k,
                     cs.config.proj_in_features, t.ran, t.failing_step, t.error, t.ran ? shape_string(t.output_shape) : "",
                     t.output_shape_matches_input, cs.run_numerically && t.ran, r.shape, r.finite,
                     snippet_multiply_adds(cs.config)});
  }
  cli.write_table(trace, kTraceTable);
  cli.write_table(summary, kSummaryTable);
  cli.write_table(timing, kTimingTable);
  if (shard.range(1).size() == 1) {
    const double agreement = agreement_with_library<double>(snippet_corrected(2, 96, 32, 4, 16), derive_seed(cli.options().seed, 100));
    if (!(agreement < kResidualRatioThreshold))
      throw std::runtime_error(fmt::format("corrected snippet and the library's Linformer layer disagree (ratio {})", agreement));
  }
}

// L4.c's confirming sweep, on shapes the main cases do not use. The shapes: every (dim, heads) of a small grid with
// seq_len = dim / heads and three other lengths, k of 16 or 48, batch 2; each traced as written (runs? predicted to
// run exactly when seq_len = dim / heads; the output's shape) and corrected. Then the corrected module against the
// library's Linformer layer in float and double at two fresh shapes, shape i drawn from derive_seed(c, i),
// c = confirming_seed(seed). Two sweeps: the shapes (traced, no randomness) and the agreements.
void measure_confirm(const ExperimentCli& cli, const Shard& shard) {
  std::vector<SnippetConfig> shapes;
  for (std::int64_t dim : {96, 128, 256})
    for (std::int64_t heads : {2, 4, 8}) {
      const std::int64_t dh = dim / heads;
      for (std::int64_t len : {dh, dh + 1, 2 * dh, std::int64_t{100}})
        shapes.push_back(snippet_as_written(2, len, dim, heads, len % 2 == 0 ? 16 : 48));
    }
  const Shard::Range range = shard.range(shapes.size());
  CsvTable t({int_col(col::batch), int_col(col::seq_len), int_col(col::dim), int_col(col::heads), int_col(col::k),
              text_col(col::predicted_to_run), text_col(col::runs), text_col(col::output_shape_matches_input),
              text_col(col::corrected_runs), text_col(col::corrected_output_shape_matches_input)});
  for (std::size_t i = range.begin; i < range.end; ++i) {
    const SnippetConfig& c = shapes[i];
    const SnippetTrace written = trace_snippet(c);
    const SnippetTrace corrected = trace_snippet(snippet_corrected(c.batch, c.seq_len, c.dim, c.heads, c.k));
    t.add_row({c.batch, c.seq_len, c.dim, c.heads, c.k, c.seq_len == c.dim / c.heads, written.ran,
               written.output_shape_matches_input, corrected.ran, corrected.output_shape_matches_input});
  }
  cli.write_table(t, kShapesConfirmTable);

  const std::vector<SnippetConfig> numeric = cli.options().quick
                                                 ? std::vector<SnippetConfig>{snippet_corrected(1, 40, 24, 3, 12)}
                                                 : std::vector<SnippetConfig>{snippet_corrected(2, 80, 48, 4, 20),
                                                                              snippet_corrected(1, 130, 64, 8, 33)};
  const std::uint64_t seed = confirming_seed(cli.options().seed);
  const Shard::Range nrange = shard.range(numeric.size());
  CsvTable a({int_col(col::batch), int_col(col::seq_len), int_col(col::dim), int_col(col::heads), int_col(col::k),
              text_col(col::precision), real_col(col::residual_ratio)});
  for (std::size_t i = nrange.begin; i < nrange.end; ++i) {
    const SnippetConfig& c = numeric[i];
    a.add_row({c.batch, c.seq_len, c.dim, c.heads, c.k, "float", agreement_with_library<float>(c, derive_seed(seed, i))});
    a.add_row({c.batch, c.seq_len, c.dim, c.heads, c.k, "double", agreement_with_library<double>(c, derive_seed(seed, i))});
  }
  cli.write_table(a, kAgreementConfirmTable);
}

// L4 from linformer_snippet.csv: whether the snippet as written runs at the documented shapes and returns
// the input's shape.
ClaimRow judge_snippet(const ExperimentCli& cli, const std::filesystem::path& dir) {
  const TableReader t(dir / kSummaryTable);
  std::size_t row = t.rows();
  for (std::size_t i = 0; i < t.rows() && row == t.rows(); ++i)
    if (t.text(i, col::case_name) == kDocumentedCase) row = i;
  if (row == t.rows()) throw std::runtime_error(fmt::format("{}: no row for case {}", t.path().string(), kDocumentedCase));
  const bool ran = t.text(row, col::runs) == "true";
  const bool documented_ok = ran && t.text(row, col::output_shape_matches_input) == "true";
  const std::string documented_failure =
      ran ? "" : t.text(row, col::failing_step) + " raises RuntimeError: " + t.text(row, col::error);
  return {"L4", documented_ok ? Verdict::holds : Verdict::fails,
          "the snippet as written returns an output of the input's shape for batch 4, L 4096, dim 512, heads 8, k 256 (1 = yes, 0 = no)",
          documented_ok ? 1.0 : 0.0, 1.0, cli.evidence_path(kSummaryTable),
          documented_ok ? "runs as documented"
                        : documented_failure +
                              "; proj_k = nn.Linear(dim_head, k) meets the sequence axis (size L) after k.transpose(-1, -2), so it runs "
                              "only when L = dim_head = 64; with nn.Linear(seq_len, k) it returns (4, 4096, 512) and, in eval mode with "
                              "zero projection biases, equals our Linformer layer"};
}

// L4.c from the confirming tables: the agreement's residual ratios (float and double), and every traced shape
// against the statement (as written: runs exactly when seq_len = dim / heads, then returns the input's shape;
// corrected: always runs and returns it).
ClaimRow judge_confirm(const ExperimentCli& cli, const std::filesystem::path& dir) {
  const TableReader shapes(dir / kShapesConfirmTable), agree(dir / kAgreementConfirmTable);
  int contradicting = 0, ran = 0;
  std::string examples;
  for (std::size_t i = 0; i < shapes.rows(); ++i) {
    const bool runs = shapes.text(i, col::runs) == "true";
    ran += runs;
    const bool ok = runs == (shapes.text(i, col::predicted_to_run) == "true") &&
                    (!runs || shapes.text(i, col::output_shape_matches_input) == "true") &&
                    shapes.text(i, col::corrected_runs) == "true" &&
                    shapes.text(i, col::corrected_output_shape_matches_input) == "true";
    if (!ok) {
      ++contradicting;
      examples += fmt::format("{}(L {}, dim {}, heads {}, k {})", examples.empty() ? "" : ", ", shapes.integer(i, col::seq_len),
                              shapes.integer(i, col::dim), shapes.integer(i, col::heads), shapes.integer(i, col::k));
    }
  }
  std::map<std::string, double> worst;  // by precision
  for (std::size_t i = 0; i < agree.rows(); ++i)
    worst[agree.text(i, col::precision)] = std::max(worst[agree.text(i, col::precision)], agree.real(i, col::residual_ratio));
  const double ratio = std::max(worst["float"], worst["double"]);
  const bool agrees = ratio <= correction_definition("L4.c").threshold && contradicting == 0;
  std::string note = fmt::format("{} shapes traced ({}), as written {} ran (every one with seq_len = dim / heads predicted to); "
                                 "shapes contradicting it: {}; corrected module against the library's Linformer layer: "
                                 "ratio {:.3g} in float, {:.3g} in double",
                                 shapes.rows(), kShapesConfirmTable, ran, contradicting, worst["float"], worst["double"]);
  if (!examples.empty()) note += "; contradicted at " + examples;
  return correction_row("L4.c", triage(agrees, false), ratio, cli.evidence_path(kAgreementConfirmTable), note);
}

}  // namespace

int main(int argc, char** argv) {
  ExperimentCli cli("exp_linformer_snippet", "L4: the explainer's LinformerAttention snippet, traced and run");
  cli.footer("Takes no .npy inputs: it traces the shapes of a code snippet, not values.");
  cli.split_measurement();
  cli.parse(argc, argv);
  const auto measure = [&](const Shard& shard) {
    measure_snippet(cli, shard);
    measure_confirm(cli, shard);
  };
  const auto judge = [&](const std::filesystem::path& dir) {
    return std::vector<ClaimRow>{judge_snippet(cli, dir), judge_confirm(cli, dir)};
  };
  return run_experiment(cli, {measure, judge});
}

}  // namespace exp_linformer_snippet
