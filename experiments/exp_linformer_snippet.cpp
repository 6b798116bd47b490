// L4: the Linformer explainer's (seed 003) conceptual PyTorch module, traced and run layer for layer.
#include <chrono>
#include <fmt/format.h>
#include <string>
#include <vector>

#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/table_reader.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/io/ledger.hpp"
#include "attnlab/attention/linformer_snippet.hpp"
#include "attnlab/attention/multihead_layer.hpp"
#include "attnlab/linalg/residual_ratio.hpp"

using namespace attnlab;

namespace exp_linformer_snippet {  // compiled beside other programs, linked alone (CMakeLists.txt: attnlab_programs)

namespace {

// Column names, spelled once for the tables' writers and their judges (a rename cannot split them).
namespace col {
constexpr const char* batch = "batch";
constexpr const char* case_name = "case";
constexpr const char* dim = "dim";
constexpr const char* error = "error";
constexpr const char* failing_step = "failing_step";
constexpr const char* heads = "heads";
constexpr const char* k = "k";
constexpr const char* multiply_adds = "multiply_adds";
constexpr const char* numeric_output_finite = "numeric_output_finite";
constexpr const char* numeric_output_shape = "numeric_output_shape";
constexpr const char* operation = "operation";
constexpr const char* output_shape = "output_shape";
constexpr const char* output_shape_matches_input = "output_shape_matches_input";
constexpr const char* proj_in_features = "proj_in_features";
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

}  // namespace

int main(int argc, char** argv) {
  ExperimentCli cli("exp_linformer_snippet", "L4: the explainer's LinformerAttention snippet, traced and run");
  cli.footer("Takes no .npy inputs: it traces the shapes of a code snippet, not values.");
  cli.split_measurement();
  cli.parse(argc, argv);
  return run_experiment(cli, {[&](const Shard& shard) { measure_snippet(cli, shard); },
                              [&](const std::filesystem::path& dir) { return std::vector<ClaimRow>{judge_snippet(cli, dir)}; }});
}

}  // namespace exp_linformer_snippet
