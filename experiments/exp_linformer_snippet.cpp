// L4: the Linformer explainer's (seed 003) conceptual PyTorch module, traced and run layer for layer.
#include <chrono>
#include <fmt/format.h>
#include <string>
#include <vector>

#include "attnlab/io/csv_table.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/io/ledger.hpp"
#include "attnlab/attention/linformer_snippet.hpp"
#include "attnlab/attention/multihead_layer.hpp"
#include "attnlab/linalg/residual_ratio.hpp"

using namespace attnlab;

namespace {

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
// Linformer heads (E = proj_k.weight, F = proj_v.weight), in double: the scaled residual.
double agreement_with_library(std::uint64_t seed) {
  const SnippetConfig c = snippet_corrected(2, 96, 32, 4, 16);
  Rng rng(seed);
  SnippetWeights<double> sw = snippet_default_weights(c, rng);
  sw.proj_k_bias.setZero();
  sw.proj_v_bias.setZero();
  HeadStack<double> x(c.batch, 1, c.seq_len, c.dim);
  for (Eigen::Index b = 0; b < c.batch; ++b) x[b] = gaussian_matrix(c.seq_len, c.dim, rng);
  const HeadStack<double> got = snippet_forward(c, sw, x, false, 0);
  const MultiheadWeights<double> w{sw.to_q.transpose(), sw.to_k.transpose(), sw.to_v.transpose(), sw.to_out.transpose(),
                                   sw.to_out_bias, c.heads};
  const HeadStack<double> want = multihead_layer(x, w, linformer_head_attention<double>({sw.proj_k, sw.proj_v}));
  double worst = 0;
  for (Eigen::Index b = 0; b < c.batch; ++b)
    worst = std::max(worst, residual_ratio<double>((got[b] - want[b]).norm(), static_cast<double>(c.seq_len), want[b].norm()));
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  ExperimentCli cli("exp_linformer_snippet", "L4: the explainer's LinformerAttention snippet, traced and run");
  cli.app().footer("Takes no .npy inputs: it traces the shapes of a code snippet, not values.");
  cli.parse(argc, argv);
  return run_experiment(cli.name(), [&] {
    const bool quick = cli.options().quick;
    // The usage example's shapes; the trace is shapes only and costs nothing, so it runs in --quick too.
    const SnippetConfig documented = snippet_as_written(4, 4096, 512, 8, 256);
    std::vector<Case> cases{
        {"as_written_documented_shapes", documented, false},
        // nn.Linear(dim_head, k) on the sequence axis: runs only when seq_len == dim_head.
        {"as_written_seq_len_equals_dim_head", snippet_as_written(4, 64, 512, 8, 256), !quick},
        {"corrected_documented_shapes", snippet_corrected(4, 4096, 512, 8, 256), !quick},
    };
    if (quick) {
      cases.push_back({"as_written_seq_len_equals_dim_head_small", snippet_as_written(1, 16, 64, 4, 32), true});
      cases.push_back({"corrected_small", snippet_corrected(1, 256, 64, 4, 32), true});
    }

    CsvTable trace({text_col("case"), int_col("step"), text_col("operation"), text_col("result")});
    CsvTable summary({text_col("case"), int_col("batch"), int_col("seq_len"), int_col("dim"), int_col("heads"), int_col("k"),
                      int_col("proj_in_features"), text_col("runs"), text_col("failing_step"), text_col("error"),
                      text_col("output_shape"), text_col("output_shape_matches_input"), text_col("run_numerically"),
                      text_col("numeric_output_shape"), text_col("numeric_output_finite"), real_col("multiply_adds")});
    CsvTable timing({text_col("case"), real_col("seconds"), real_col("multiply_adds")});
    bool documented_ok = false;
    std::string documented_failure;
    for (std::size_t i = 0; i < cases.size(); ++i) {
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
                       cs.config.proj_in_features, t.ran, t.failing_step, t.error,
                       t.ran ? shape_string(t.output_shape) : "", t.output_shape_matches_input,
                       cs.run_numerically && t.ran, r.shape, r.finite, snippet_multiply_adds(cs.config)});
      if (i == 0) {
        documented_ok = t.ran && t.output_shape_matches_input;
        documented_failure = t.ran ? "" : t.failing_step + " raises RuntimeError: " + t.error;
      }
    }
    cli.write_table(trace, "linformer_snippet_trace.csv");
    cli.write_table(summary, "linformer_snippet.csv");
    cli.write_table(timing, "linformer_snippet_timing.csv");
    const double agreement = agreement_with_library(derive_seed(cli.options().seed, 100));
    if (!(agreement < kResidualRatioThreshold))
      throw std::runtime_error(fmt::format("corrected snippet and the library's Linformer layer disagree (ratio {})", agreement));

    ClaimRow row{"L4", "003_cab8b9be341236c2.txt", documented_ok ? Verdict::holds : Verdict::fails,
                 "the snippet as written returns an output of the input's shape for batch 4, L 4096, dim 512, heads 8, k 256 (1 = yes, 0 = no)",
                 documented_ok ? 1.0 : 0.0, 1.0, cli.evidence_path("linformer_snippet.csv"),
                 documented_ok ? "runs as documented"
                               : documented_failure +
                                     "; proj_k = nn.Linear(dim_head, k) meets the sequence axis (size L) after k.transpose(-1, -2), so it runs "
                                     "only when L = dim_head = 64; with nn.Linear(seq_len, k) it returns (4, 4096, 512) and, in eval mode with "
                                     "zero projection biases, equals our Linformer layer"};
    cli.write_claims({row});
  });
}
