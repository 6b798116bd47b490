// The command line every experiment shares: --seed, --quick, --out, --threads, given .npy inputs, and the
// sharded run's --shard I/N and --judge DIR (issue 16).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/ledger.hpp"
#include "attnlab/lab/given_inputs.hpp"
#include "attnlab/lab/shard.hpp"

// CLI11 stays out of this header (issue 13 item 6): its header costs every experiment that includes it seconds
// of compile time for validators and formatters the experiment never calls. The flags an experiment adds go
// through ExperimentCli's own methods below; lab/cli_validators.hpp has the CLI11 pieces the apps share.
namespace CLI {
class App;
}  // namespace CLI

namespace attnlab {

// Exit statuses: 0 done, 1 the run failed (I/O, a non-finite result), 2 bad usage.
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

struct CommonOptions {
  std::uint64_t seed = 20250311;  // the date of seed 000's post, as good as any
  bool quick = false;
  std::filesystem::path out = "results";  // quick-results with --quick
  int threads = 0;  // 0 until parsed; then the number of OpenMP threads used
};

class ExperimentCli {
 public:
  // With `given`, the experiment also takes that kind of .npy inputs (see given_inputs.hpp).
  ExperimentCli(std::string name, std::string description, std::optional<GivenKind> given = std::nullopt);
  ~ExperimentCli();
  ExperimentCli(const ExperimentCli&) = delete;
  ExperimentCli& operator=(const ExperimentCli&) = delete;

  // Experiment-specific flags, added before parse(). A bad value is a usage error like any other: one
  // line naming the flag and the value, exit status 2, nothing created.
  //   --flag N     an integer in [lo, hi], lo >= 0, written in decimal without leading zeros (CLI11 alone
  //                reads "010" as octal 8); with show_default, --help shows `target`'s value now as the default.
  void add_integer(const std::string& flag, int& target, const std::string& description, int lo, int hi,
                   bool show_default = false);
  void add_integer(const std::string& flag, std::int64_t& target, const std::string& description, std::int64_t lo,
                   std::int64_t hi, bool show_default = false);
  //   --flag X     a finite real number in (lo, hi] (decimal or exponent notation; nan and inf refused);
  //                --help shows `target`'s value now as the default.
  void add_real(const std::string& flag, double& target, const std::string& description, double lo, double hi);
  //   --flag NAME  one of `choices`.
  void add_choice(const std::string& flag, std::string& target, const std::string& description,
                  const std::vector<std::string>& choices);
  //   --flag TYPE  any text (type_name is what --help shows, e.g. "DIR"); checked by the experiment.
  void add_text(const std::string& flag, std::string& target, const std::string& description,
                const std::string& type_name = "TEXT");
  // A check across flags, run at the end of parsing, before --out is created: `check` returns "" when the
  // values fit together, else the problem, reported as a usage error of `flag`.
  void add_parse_check(const std::string& flag, std::function<std::string()> check);
  // Text --help prints after the options.
  void footer(const std::string& text);
  // For a run on the user's matrices: the least memory the run needs, from the given shapes alone (the
  // matrices it surely forms, e.g. one n x n double matrix for the exact attention it compares with), and
  // what they are. parse() refuses a run whose need exceeds available_memory() with one line naming the
  // input's size (exit status 2, nothing written), rather than failing out of memory midway.
  //   cli.given_memory_need([](const GivenInputs& g) { return double_matrices(1, g.matrix("q").rows(), g.matrix("k").rows(), "P"); });
  void given_memory_need(std::function<GivenMemoryNeed(const GivenInputs&)> need) { given_need_ = std::move(need); }
  // The CLI11 parser itself, for library code that adds flags (given_inputs.cpp, family_option.cpp); using
  // it needs <CLI/CLI.hpp>.
  CLI::App& app() { return *parser_; }
  // For an experiment run in measure and judge parts (run_experiment with ExperimentParts): adds --shard
  // and --judge. Call before parse().
  void split_measurement();
  bool splits_measurement() const { return split_; }

  // Parses the flags (with --judge DIR: seed and quick/full from DIR's merged stamp, --out is DIR), loads
  // and checks given inputs, checks that --out can be created or written, without creating it (and,
  // with given inputs, holds no claims.csv, so user runs never mix with the ledger's
  // evidence) and sets the thread count. On bad input prints one line naming the problem
  // and exits with status 2; on --help prints the help and exits with 0.
  void parse(int argc, char** argv);

  const CommonOptions& options() const { return options_; }
  // The share of the sweeps this run measures: Shard() (everything) unless --shard I/N was given.
  const Shard& shard() const { return shard_; }
  bool sharded() const { return sharded_; }    // --shard given: measure only, stamp, no ledger
  bool judging() const { return judging_; }    // --judge DIR given: judge DIR's merged tables only
  // The experiment's own flags as given on the command line, in the order they were added, each as
  // "--name value..." (flags alone): every option but the common ones (--seed, --quick, --out,
  // --threads, --shard, --judge), which the stamp records apart or which cannot change a table.
  // Shards stamped with different ones are not merged.
  std::string measurement_options() const;
  const std::string& name() const { return name_; }

  // Whether this run analyses the user's matrices instead of random draws, and those matrices.
  bool uses_given() const { return given_ && given_->used(); }
  const GivenInputs& given() const;
  // The value of every table's `inputs` column: "random", given_inputs' label, or the data set an
  // experiment named with set_dataset (e.g. "fashion-mnist" for the training experiment).
  std::string inputs_label() const {
    return given_ ? given_->label() : dataset_.empty() ? std::string(kRandomInputsLabel) : dataset_;
  }
  // For an experiment that measures a fixed data set instead of random draws.
  void set_dataset(std::string label) { dataset_ = std::move(label); }

  // Writes `table` to <out>/<file> with the `inputs` column appended (and notes the file for the stamp).
  void write_table(const CsvTable& table, const std::string& file) const;
  // The tables written so far, in order.
  const std::vector<std::string>& written_tables() const { return written_; }
  const std::vector<std::string>& artifact_dirs() const { return artifact_dirs_; }
  // Declares a directory under --out (relative, e.g. "checkpoints/exact") whose files a shard's stamp
  // lists as artifacts, so attnlab_merge carries them into the merged directory.
  void add_artifact_dir(const std::string& relative_dir) const { artifact_dirs_.push_back(relative_dir); }
  // Merges `rows` into the ledger, each row naming this experiment, unless the run used given inputs: a
  // verdict is about our sweep, and the user's data yields a report about that data only. Claims go to
  // claims.csv, corrected statements (ClaimRow::corrects set) to corrections.csv.
  void write_claims(const std::vector<ClaimRow>& rows) const;

  // Creates --out (and in quick mode marks it with kQuickMarker) the first time the run writes there,
  // then runs the hook of before_first_write (the run's unfinished stamp); parse() only checks that it can
  // be. Every file the run writes goes through here first, so a refusal found while measuring (a flag that
  // only the sweep can check, an input the library rejects) leaves --out as it was. Throws OutputError.
  void prepare_out() const;
  // What prepare_out does once --out exists, before the run's first file (run_experiment: the run stamp).
  void before_first_write(std::function<void()> hook) const { first_write_hook_ = std::move(hook); }

  // <out>/<file> (a path to write to: prepare_out() first), and the same path relative to the repository
  // root for the ledger.
  std::filesystem::path output_path(const std::string& file) const;
  std::string evidence_path(const std::string& file) const;
  std::filesystem::path ledger_path() const { return options_.out / kClaimsFile; }
  // The second ledger, of the corrected statements (rows with ClaimRow::corrects).
  std::filesystem::path corrections_path() const { return options_.out / kCorrectionsFile; }

 private:
  std::string name_;
  std::unique_ptr<CLI::App> parser_;
  std::vector<std::pair<std::string, std::function<std::string()>>> checks_;  // add_parse_check, in order
  CommonOptions options_;
  std::optional<GivenInputs> given_;
  std::string dataset_;
  std::string shard_text_;
  std::filesystem::path judge_dir_;
  Shard shard_;
  bool split_ = false, sharded_ = false, judging_ = false;
  std::function<GivenMemoryNeed(const GivenInputs&)> given_need_;
  mutable bool out_prepared_ = false;
  mutable std::function<void()> first_write_hook_;
  mutable std::vector<std::string> written_, artifact_dirs_;
};

// Runs an experiment body, turning escaping exceptions into one line on stderr and
// exit status 1, so a failed run never aborts or dumps core. Atomic writes mean a
// failure leaves the previous files in place.
int run_experiment(const std::string& name, const std::function<void()>& body);

// An experiment in two parts (issue 13 item 4, issue 16): `measure` runs the configurations of `shard`
// (Shard::range, Shard::runs_whole) and writes their tables with cli.write_table, every table in every
// shard (a shard with no configurations of a sweep writes its header only); `judge` reads the tables back
// from `dir` (TableReader), may write derived tables (fits, summaries) with cli.write_table, and returns
// the ledger rows. A claim's judgement is a function of the tables on disk, never of `measure`'s memory,
// so a sweep measured in pieces on many machines and merged is judged by the same code.
struct ExperimentParts {
  std::function<void(const Shard& shard)> measure;
  std::function<std::vector<ClaimRow>(const std::filesystem::path& dir)> judge;
};

// Runs the parts as the command line asks (through run_experiment's error handling):
//   plain run       measure(Shard()), then judge(--out), the rows into --out's ledger;
//   --shard I/N     removes --out's old stamp, measure(shard), then writes <experiment>.shard.json;
//   --judge DIR     judge(DIR), the rows into DIR's ledger.
int run_experiment(const ExperimentCli& cli, const ExperimentParts& parts);

}  // namespace attnlab
