// attnlab_inspect: the seeds' weight claims (R2, R5, R6, S1, S2, G1) judged on a user's Transformer, every
// layer and head, from its safetensors checkpoint (or an attnlab checkpoint); docs/inspect.md.
//
//   build/bin/attnlab_inspect --layout gpt2 model.safetensors --out my-gpt2
//   build/bin/attnlab_inspect --layout attnlab results/checkpoints/exact/seed-0 --export exact.safetensors
#include <CLI/CLI.hpp>
#include <Eigen/Core>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <omp.h>
#include <string>
#include <vector>

#include "attnlab/io/atomic_file.hpp"
#include "attnlab/io/printable.hpp"
#include "attnlab/io/safetensors.hpp"
#include "attnlab/lab/checkout_root.hpp"
#include "attnlab/lab/cli_validators.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/lab/inspect_run.hpp"
#include "attnlab/lab/model_inspection.hpp"
#include "attnlab/lab/program_data.hpp"
#include "attnlab/lab/subprocess.hpp"
#include "attnlab/model/checkpoint_export.hpp"
#include "attnlab/model/checkpoint_manifest.hpp"

namespace attnlab_inspect {  // compiled beside other programs, linked alone (CMakeLists.txt: attnlab_programs)

namespace {

using namespace attnlab;
namespace fs = std::filesystem;

constexpr const char* kName = "attnlab_inspect";

// Bad input found after parsing: exit status 2, like a bad flag (the library's checks throw the same type).
using UsageError = InspectionUsageError;

struct Options {
  fs::path model, out, export_to;
  std::string precision = "auto";
  int threads = 0;
  bool no_figure = false;
  fs::path figure_script;  // tools/inspect_figure.py of this installation, found by check_options
  QkLayoutOptions layout;
  std::string prefix;
};

void add_options(CLI::App& app, Options& o) {
  app.add_option("model", o.model, "a .safetensors file, a model.safetensors.index.json, a directory holding either, or "
                                   "(--layout attnlab) an attnlab checkpoint directory")->type_name("PATH")->required();
  app.add_option("--layout", o.layout.layout, "the checkpoint's naming and weight convention (docs/inspect.md)")
      ->check(CLI::IsMember(qk_layout_names()))->required();
  app.add_option("--out", o.out, "directory for the tables, claims.csv and the figure (each file written atomically)")->type_name("DIR");
  app.add_option("--heads", o.layout.heads, "query heads, when no config.json beside the weights says (1 to 2^20)")->check(integer_in(1, kInspectMaxHeads));
  app.add_option("--kv-heads", o.layout.kv_heads, "key heads (grouped-query attention), checked against the weights (1 to 2^20)")
      ->check(integer_in(1, kInspectMaxHeads));
  app.add_option("--prefix", o.prefix, "text before the layout's names (default: found in the checkpoint)")->type_name("TEXT");
  app.add_option("--q-pattern", o.layout.q_pattern, "custom: layer {l}'s query weight name")->type_name("NAME")->group("--layout custom");
  app.add_option("--k-pattern", o.layout.k_pattern, "custom: layer {l}'s key weight name")->type_name("NAME")->group("--layout custom");
  app.add_option("--q-bias-pattern", o.layout.q_bias_pattern, "custom: layer {l}'s query bias name (optional)")->type_name("NAME")->group("--layout custom");
  app.add_option("--k-bias-pattern", o.layout.k_bias_pattern, "custom: layer {l}'s key bias name (optional)")->type_name("NAME")->group("--layout custom");
  app.add_flag("--transpose", o.layout.transpose, "custom: weights stored input x output (y = x W + b), not nn.Linear's output x input")
      ->group("--layout custom");
  app.add_option("--precision", o.precision, "float, double, or auto: double when a weight is F64, else float")
      ->check(CLI::IsMember(inspection_precisions()))->capture_default_str();
  app.add_option("--threads", o.threads, "threads over heads, 1 to 1024 (default: all cores); results identical for any")->check(integer_in(1, kInspectMaxThreads));
  app.add_flag("--no-figure", o.no_figure, "do not draw inspect_skew_share.svg");
  app.add_option("--export", o.export_to, "--layout attnlab: write the checkpoint as this safetensors file instead, and stop")->type_name("FILE");
  app.footer("Layouts: bert, roberta (encoder.layer.{l}.attention.self.{query,key}), vit (encoder.layer.{l}.attention.attention."
             "{query,key}), gpt2 (h.{l}.attn.c_attn, Conv1D, Q|K|V fused), llama (layers.{l}.self_attn.{q,k}_proj, grouped "
             "key heads, rotary), attnlab (block{l}.attn.{Wq,Wk}), custom (--q-pattern, --k-pattern), auto (the one named layout "
             "whose names the checkpoint has).\nExit status: 0 done; "
             "1 the run failed (an output could not be written); 2 bad input: a flag, a malformed or hostile file, a layout "
             "that does not fit the checkpoint, a non-finite weight (nothing is written).");
}

// Cross-flag checks and the output directory's, before anything is read or written.
void check_options(CLI::App& app, Options& o) {
  if (app.count("--prefix")) o.layout.prefix = o.prefix;
  check_layout_flags(o.layout.layout, [&](const std::string& flag) { return app.count(flag) > 0; });
  if (!o.export_to.empty()) {
    if (o.layout.layout != "attnlab" || !o.out.empty())
      throw UsageError("--export writes an attnlab checkpoint (--layout attnlab) as safetensors, without --out");
    try {  // a device, a directory or a link at the path is refused now, as --out's are, not after reading the model
      check_output_target(o.export_to);
    } catch (const OutputError& e) {
      throw UsageError(std::string("--export: ") + e.what());
    }
    return;
  }
  if (o.out.empty()) throw UsageError("--out DIR is required (where the tables and claims.csv go)");
  // The figure's script is found now, not after the measurement (program_data.hpp).
  if (!o.no_figure) {
    try {
      o.figure_script = program_data_file("tools/inspect_figure.py");
    } catch (const ProgramDataError& e) {
      throw UsageError(std::string(e.what()) + "; or give --no-figure");
    }
  }
  // The committed results of a checkout hold the experiments' ledger: a model's verdicts never mix with it.
  if (const auto root = checkout_root(o.out)) {
    const fs::path rel = fs::weakly_canonical(fs::absolute(o.out)).lexically_relative(*root);
    if (!rel.empty() && *rel.begin() == "results")
      throw UsageError(fmt::format("--out: {} is the committed results of {}; give another directory", o.out.string(), root->string()));
  }
  if (fs::exists(o.out / "claims.csv"))
    for (const ClaimRow& row : read_ledger(o.out / "claims.csv"))
      if (row.experiment != kName)
        throw UsageError(fmt::format("--out: {} holds the ledger of {}; give another directory", o.out.string(), row.experiment));
  // A new directory is made only when there is something to write; its nearest existing ancestor is checked now.
  fs::path existing = fs::absolute(o.out);
  while (!fs::exists(existing) && existing.has_parent_path() && existing != existing.parent_path()) existing = existing.parent_path();
  try {
    ensure_writable_directory(existing);
  } catch (const OutputError& e) {
    throw UsageError(std::string("--out: ") + e.what());
  }
}

// The figure of skew shares per layer and head, drawn by tools/inspect_figure.py with the report's figure code.
void draw_figure(const fs::path& script, const fs::path& out) {
  const ProcessResult r = run_process("/usr/bin/python3", {script.string(), "--dir", out.string()}, true);
  if (r.exit_status == 0) fmt::print("figure: {}\n", (out / "inspect_skew_share.svg").string());
  else if (r.exit_status == 77) fmt::print("figure skipped: {}", r.output);
  else {
    std::string_view text = r.output;  // the script's one line
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
    throw std::runtime_error(fmt::format("{} (exit status {})", escaped(text, true), r.exit_status));
  }
}

int run(const Options& o) {
  if (!o.export_to.empty()) {
    const std::size_t n = export_checkpoint_safetensors(o.model, o.export_to);
    fmt::print("{}: wrote {} tensors of {} to {}\n", kName, n, o.model.string(), o.export_to.string());
    return 0;
  }
  const InspectionRun inspected = run_inspection(o.model, o.layout, o.precision, o.threads, o.out);
  const ModelInspection& r = inspected.inspection;
  const InspectionClaims& claims = inspected.claims;
  write_inspection(r, claims, o.out);
  fmt::print("{}: {}\n", kName, inspection_title(r));
  for (const auto& line : claims.summary) fmt::print("{}\n", line);
  fmt::print("tables: {}/inspect_heads.csv, inspect_layers.csv, inspect_costs.csv, inspect_param_counts.csv, claims.csv\n", o.out.string());
  if (!o.no_figure) draw_figure(o.figure_script, o.out);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app("the seeds' weight claims judged on your Transformer, every layer and head (docs/inspect.md)", kName);
  app.formatter(std::make_shared<PlainHelpFormatter>());
  add_options(app, o);
  if (const auto status = parse_command_line(app, argc, argv)) return *status;
  try {
    check_options(app, o);
  } catch (const std::exception& e) {  // UsageError, OutputError of --out, a ledger that cannot be read
    fmt::print(stderr, "{}: {}\n", kName, e.what());
    return kExitUsage;
  }
  o.threads = o.threads > 0 ? o.threads : omp_get_num_procs();
  omp_set_num_threads(o.threads);
  Eigen::setNbThreads(1);  // heads run in parallel; each decomposition on one thread, so results do not depend on the count
  try {
    return run(o);
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: {}\n", kName, e.what());
    // The input's fault (a file, a layout, a flag) is bad usage; anything else (an output that cannot be written) a failed run.
    const bool bad_input = dynamic_cast<const UsageError*>(&e) || dynamic_cast<const SafetensorsError*>(&e) ||
                           dynamic_cast<const QkLayoutError*>(&e) || dynamic_cast<const CheckpointError*>(&e) ||
                           dynamic_cast<const HeadRangeError*>(&e);
    return bad_input ? kExitUsage : kExitFailure;
  }
}

}  // namespace attnlab_inspect
