// A model's attention weights inspected head by head against the seeds' weight claims (R2, R5, R6, S1,
// S2, G1): the measurement, its tables, the verdicts and a summary for people. attnlab_inspect's body.
//
//   auto c = QkCheckpoint::open(path, options);
//   const ModelInspection r = inspect_model(*c, "my-model.safetensors", false, 2);
//   write_inspection(r, judge_inspection(r, "my-gpt2"), "my-gpt2");
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/ledger.hpp"
#include "attnlab/model/qk_checkpoint.hpp"
#include "attnlab/qk/factored_spectrum.hpp"

namespace attnlab {

// One head of one layer in one form: "weights" is M = W_Q,h W_K,h^T (d x d), "augmented" the form with the
// projections' biases, M~ = [W_Q,h; b_q,h^T] [W_K,h; b_k,h^T]^T ((d+1) x (d+1)), the bilinear form of the
// scores q_i^T k_j = [x_i 1] M~ [x_j 1]^T (present only where the model has biases).
struct HeadInspection {
  Eigen::Index layer = 0, head = 0, kv_head = 0;
  std::string form;
  Eigen::Index rows = 0;  // d, or d + 1 augmented
  FactoredSpectrum spectrum;
};

struct LayerTiming {
  Eigen::Index layer = 0;
  double seconds = 0;  // wall time: reading the layer's weights and its heads' factored decompositions
  double flops = 0;    // counted operations of those decompositions (FactoredSpectrum::flops)
};

struct ModelInspection {
  QkLayoutPlan plan;
  std::string model;  // the checkpoint as the user named it
  bool in_double = false;
  int threads = 1;
  std::vector<HeadInspection> heads;  // layer by layer, head by head, "weights" before "augmented"
  std::vector<LayerTiming> timing;
};

// A head whose measurement cannot be reported: its norms ||W_Q,h W_K,h^T||, ||S_w|| are past the largest double
// (weights of F64 scale 1e160 and up; every other quantity is measured at unit scale, factored_spectrum.hpp).
// what() names the layer, head and form. The input's fault: attnlab_inspect refuses with exit status 2.
struct HeadRangeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Reads every layer of `c` and measures each head through the factored path (factored_spectrum), in
// double or float, heads in parallel on `threads` OpenMP threads (results do not depend on the count).
// Throws what the checkpoint's reads throw (SafetensorsError for a non-finite weight) and HeadRangeError.
ModelInspection inspect_model(QkCheckpoint& c, const std::string& model, bool in_double, int threads);

// "model.safetensors (gpt2 layout, prefix "transformer.": 12 layers x 12 heads, d 768, d_k 64, F32, with
// biases, in float)": what was inspected, as every claim's note and the summary say it.
std::string inspection_title(const ModelInspection& r);

// The tables (each with an `inputs` column naming the model), as write_inspection writes them:
//   inspect_heads.csv         one row per head and form
//   inspect_layers.csv        one row per layer and form: the spread over its heads
//   inspect_costs.csv         S1, S2 at the model's d, d_k: parameters and score multiply-adds for n in kInspectLengths
//   inspect_param_counts.csv  G1: the parameter count of the model's widths for every allowed head number
//   inspect_timing.csv        seconds and counted operations per layer (timings: not reproducible bit for bit)
CsvTable inspection_heads_table(const ModelInspection& r);
CsvTable inspection_layers_table(const ModelInspection& r);
CsvTable inspection_costs_table(const ModelInspection& r);
CsvTable inspection_param_counts_table(const ModelInspection& r);
CsvTable inspection_timing_table(const ModelInspection& r);

// The sequence lengths S2 is judged at.
inline const std::vector<std::int64_t> kInspectLengths = {128, 512, 2048, 8192};

// R2, R5, R6 from the "weights" rows (the augmented form's worst in the note), S1 and S2 from the costs,
// G1 from the counts: the experiments' rules and thresholds (weight_claims.hpp), on this model. `dir`
// names the evidence files; every note names the model. With the ledger rows, one line per claim for
// people (the worst head named) and one on the skew shares.
struct InspectionClaims {
  std::vector<ClaimRow> rows;
  std::vector<std::string> summary;
};
InspectionClaims judge_inspection(const ModelInspection& r, const std::filesystem::path& dir);

// Writes the tables and claims.csv (the rows of judge_inspection) into `dir` (created if needed), each
// file atomically.
void write_inspection(const ModelInspection& r, const InspectionClaims& claims, const std::filesystem::path& dir);

}  // namespace attnlab
