// attnlab_inspect's pipeline, for the program and the Python module alike: the checkpoint opened under its layout,
// the precision chosen, every head measured, the claims judged. What is left to the program is writing the tables
// (write_inspection) and printing; the Python module returns them.
//
//   const InspectionRun r = run_inspection("gpt2/", layout, "auto", 2, "my-gpt2");
//   write_inspection(r.inspection, r.claims, "my-gpt2");
#pragma once

#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnlab/lab/model_inspection.hpp"
#include "attnlab/model/qk_checkpoint.hpp"

namespace attnlab {

// Bad usage the layout planner cannot see (an option of another layout, a precision the weights do not fit):
// attnlab_inspect's exit status 2, a ValueError in Python.
struct InspectionUsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The ranges of attnlab_inspect's --heads and --kv-heads, and of --threads; its --precision values.
inline constexpr long long kInspectMaxHeads = 1 << 20;
inline constexpr long long kInspectMaxThreads = 1024;
inline const std::vector<std::string>& inspection_precisions() {
  static const std::vector<std::string> all = {"auto", "float", "double"};
  return all;
}

// --q-pattern, --k-pattern, --q-bias-pattern, --k-bias-pattern and --transpose apply to --layout custom only:
// InspectionUsageError for the first of them `given` says was given with another layout.
void check_layout_flags(const std::string& layout, const std::function<bool(const std::string& flag)>& given);

struct InspectionRun {
  ModelInspection inspection;
  InspectionClaims claims;
};

// --precision (auto, float or double) on this checkpoint: double when asked, or under auto when a weight is F64;
// float with F64 weights is refused (InspectionUsageError naming `model`).
bool inspection_in_double(const QkCheckpoint& c, const std::string& precision, const std::string& model);

// Measures every head of `c` in the chosen precision on `threads` threads and judges the claims, their evidence
// named under `evidence_dir` (inspect_model, judge_inspection).
InspectionRun inspect_checkpoint(QkCheckpoint& c, const std::string& model, const std::string& precision, int threads,
                                 const std::filesystem::path& evidence_dir);

// The whole of attnlab_inspect but the writing: QkCheckpoint::open(model, layout), then inspect_checkpoint. Throws
// what they throw: QkLayoutError, SafetensorsError, CheckpointError, InspectionUsageError (bad input, each one line).
InspectionRun run_inspection(const std::filesystem::path& model, const QkLayoutOptions& layout, const std::string& precision,
                             int threads, const std::filesystem::path& evidence_dir);

}  // namespace attnlab
