// The command line every experiment shares: --seed, --quick, --out, --threads, and given .npy inputs.
#include "attnlab/lab/experiment_cli.hpp"

#include <CLI/CLI.hpp>
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fmt/format.h>
#include <set>
#include <utility>
#include <stdexcept>
#include <new>
#include <omp.h>

#include "attnlab/io/atomic_file.hpp"
#include "attnlab/io/memory_budget.hpp"
#include "attnlab/lab/build_id.hpp"
#include "attnlab/lab/build_isa.hpp"
#include "attnlab/lab/checkout_root.hpp"
#include "attnlab/lab/cli_validators.hpp"
#include "attnlab/lab/quick_marker.hpp"
#include "attnlab/lab/shard_stamp.hpp"

namespace attnlab {

ExperimentCli::ExperimentCli(std::string name, std::string description, std::optional<GivenKind> given)
    : name_(std::move(name)), parser_(std::make_unique<CLI::App>(std::move(description), name_)) {
  parser_->formatter(std::make_shared<PlainHelpFormatter>());
  parser_->add_option("--seed", options_.seed, "base seed, 0 to 2^64 - 1; trial seeds are derived from it")
      ->check(NonNegativeInteger)->capture_default_str();
  parser_->add_flag("--quick", options_.quick, "small sweep for tests (seconds, not minutes)");
  parser_->add_option("--out", options_.out, "output directory for tables and claims.csv (default: results; quick-results with --quick)")
      ->type_name("DIR");
  parser_->add_option("--threads", options_.threads, "worker threads, 1 to 1024 (default: all cores)")
      ->check(NonNegativeInteger & CLI::Range(1, 1024));
  if (given) given_.emplace(*parser_, *given);
}

ExperimentCli::~ExperimentCli() = default;

namespace {
template <typename Int>
void add_integer_option(CLI::App& app, const std::string& flag, Int& target, const std::string& description, Int lo,
                        Int hi, bool show_default) {
  if (lo < 0) throw std::logic_error("ExperimentCli::add_integer: " + flag + " needs lo >= 0");
  CLI::Option* opt = app.add_option(flag, target, description)->check(NonNegativeInteger & CLI::Range(lo, hi));
  if (show_default) opt->capture_default_str();
}
}  // namespace

void ExperimentCli::add_integer(const std::string& flag, int& target, const std::string& description, int lo, int hi,
                                bool show_default) {
  add_integer_option(*parser_, flag, target, description, lo, hi, show_default);
}

void ExperimentCli::add_integer(const std::string& flag, std::int64_t& target, const std::string& description,
                                std::int64_t lo, std::int64_t hi, bool show_default) {
  add_integer_option(*parser_, flag, target, description, lo, hi, show_default);
}

void ExperimentCli::add_real(const std::string& flag, double& target, const std::string& description, double lo, double hi) {
  // FiniteNumber refuses nan, inf and numbers past a double; then the half-open range.
  const auto in_range = [lo, hi](const std::string& text) -> std::string {
    const double v = std::strtod(text.c_str(), nullptr);
    return v > lo && v <= hi ? std::string() : fmt::format("{} is outside ({:g}, {:g}]", text, lo, hi);
  };
  parser_->add_option(flag, target, description)->check(FiniteNumber)->check(CLI::Validator(in_range, "X"))->capture_default_str();
}

void ExperimentCli::add_choice(const std::string& flag, std::string& target, const std::string& description,
                               const std::vector<std::string>& choices) {
  parser_->add_option(flag, target, description)->check(CLI::IsMember(choices));
}

void ExperimentCli::add_text(const std::string& flag, std::string& target, const std::string& description,
                             const std::string& type_name) {
  parser_->add_option(flag, target, description)->type_name(type_name);
}

void ExperimentCli::add_parse_check(const std::string& flag, std::function<std::string()> check) {
  // Chained after any earlier check: CLI11 keeps one parse-complete callback.
  checks_.emplace_back(flag, std::move(check));
  if (checks_.size() > 1) return;
  parser_->parse_complete_callback([this] {
    for (const auto& [name, run] : checks_)
      if (std::string problem = run(); !problem.empty()) throw CLI::ValidationError(name, problem);
  });
}

void ExperimentCli::footer(const std::string& text) { parser_->footer(text); }

void ExperimentCli::split_measurement() {
  if (split_) return;
  split_ = true;
  parser_->add_option("--shard", shard_text_,
                      "measure only shard I of N of the sweeps (1 <= I <= N): its tables and a stamp, no ledger; "
                      "merge the shards with attnlab_merge, then --judge the merged directory")
      ->type_name("I/N");
  parser_->add_option("--judge", judge_dir_,
                      "judge the merged tables in DIR (attnlab_merge's output): derived tables and ledger rows into DIR; "
                      "the seed and quick/full come from DIR's stamp")
      ->type_name("DIR")
      ->excludes("--shard")
      ->excludes("--out")
      ->excludes("--seed")
      ->excludes("--quick");
}

void ExperimentCli::parse(int argc, char** argv) {
  if (const auto status = parse_command_line(*parser_, argc, argv)) std::exit(*status);
  try {
    if (given_) given_->load();
  } catch (const GivenInputsError& e) {
    fmt::print(stderr, "{}: {}\n", name_, e.what());
    std::exit(kExitUsage);
  }
  if (uses_given() && given_need_) {
    const GivenMemoryNeed need = given_need_(*given_);
    if (const double avail = available_memory(); need.bytes > avail) {
      fmt::print(stderr, "{}: the given inputs ({}) need at least {} here, for {}; {} available\n", name_, given_->label(),
                 gib_text(need.bytes), need.what, gib_text(avail));
      std::exit(kExitUsage);
    }
  }
  if (split_ && parser_->count("--shard") > 0) {
    try {
      shard_ = Shard::parse(shard_text_);
    } catch (const std::invalid_argument& e) {
      fmt::print(stderr, "{}: --shard: {}\n", name_, e.what());
      std::exit(kExitUsage);
    }
    sharded_ = true;
  }
  if (split_ && parser_->count("--judge") > 0) {
    // The merged directory says what it holds; the judgement must not be told otherwise.
    try {
      const ShardStamp stamp = read_stamp(merged_stamp_path(judge_dir_, name_));
      if (stamp.experiment != name_ || !stamp.merged)
        throw StampError(fmt::format("{}: not {}'s merged stamp", merged_stamp_path(judge_dir_, name_).string(), name_));
      check_stamped_tables(stamp, judge_dir_);
      options_.seed = stamp.seed;
      options_.quick = stamp.quick;
      options_.out = judge_dir_;
    } catch (const StampError& e) {
      fmt::print(stderr, "{}: --judge: {} (merge the shards with attnlab_merge first)\n", name_, e.what());
      std::exit(kExitUsage);
    }
    judging_ = true;
  }
  if (uses_given() && (sharded_ || judging_)) {
    fmt::print(stderr, "{}: --shard and --judge split the random sweep; runs on given inputs are not sharded\n", name_);
    std::exit(kExitUsage);
  }
  // --family picks among our random input families; with the user's own matrices there is none to pick.
  if (uses_given() && parser_->get_option_no_throw("--family") != nullptr && parser_->count("--family") > 0) {
    fmt::print(stderr, "{}: --family chooses among random input families and cannot be combined with given inputs\n",
               name_);
    std::exit(kExitUsage);
  }
  // Quick runs land in quick-results unless told otherwise, never in the committed results.
  if (options_.quick && parser_->count("--out") == 0 && !judging_) options_.out = "quick-results";
  // Checked here, created (and marked quick) only when the run writes its first file (prepare_out): an
  // input refused after parsing (a checkpoint, the data set) leaves nothing behind.
  if (const std::string problem = output_directory_problem(options_.out); !problem.empty()) {
    fmt::print(stderr, "{}: --out: {}\n", name_, problem);
    std::exit(kExitUsage);
  }
  if (!uses_given()) {
    const bool marked_quick = std::filesystem::exists(options_.out / kQuickMarker);
    if (options_.quick && !marked_quick && std::filesystem::exists(ledger_path())) {
      fmt::print(stderr, "{}: --out: {} holds a full run's claims.csv; --quick results go elsewhere (default quick-results)\n",
                 name_, options_.out.string());
      std::exit(kExitUsage);
    }
    if (!options_.quick && marked_quick) {
      fmt::print(stderr, "{}: --out: {} holds --quick results ({}); give a full run another directory\n", name_,
                 options_.out.string(), kQuickMarker);
      std::exit(kExitUsage);
    }
  }
  if (uses_given() && std::filesystem::exists(ledger_path())) {
    fmt::print(stderr, "{}: --out: {} holds a claims ledger; write runs on given inputs to another directory\n", name_,
               options_.out.string());
    std::exit(kExitUsage);
  }
  if (options_.threads == 0) options_.threads = omp_get_num_procs();
  omp_set_num_threads(options_.threads);
  // Eigen's own GEMM threading chooses its blocking from the thread count, which
  // would change summation order with --threads; we parallelise across trials instead.
  Eigen::setNbThreads(1);
}

const GivenInputs& ExperimentCli::given() const {
  if (!given_) throw std::logic_error(name_ + " takes no given inputs");
  return *given_;
}

void ExperimentCli::prepare_out() const {
  if (out_prepared_) return;
  ensure_writable_directory(options_.out);
  if (options_.quick && !uses_given() && !std::filesystem::exists(options_.out / kQuickMarker))
    write_file_atomically(options_.out / kQuickMarker, kQuickMarkerText);
  out_prepared_ = true;
  if (first_write_hook_) std::exchange(first_write_hook_, {})();
}

void ExperimentCli::write_table(const CsvTable& table, const std::string& file) const {
  table.with_column(text_col("inputs"), inputs_label()).write(output_path(file));
  if (std::find(written_.begin(), written_.end(), file) == written_.end()) written_.push_back(file);
}

void ExperimentCli::write_claims(const std::vector<ClaimRow>& rows) const {
  // No rows (a user's --checkpoint, a judge with nothing to judge): no ledger is created or rewritten.
  if (uses_given() || rows.empty()) return;
  prepare_out();
  std::vector<ClaimRow> claims, corrections;
  for (ClaimRow r : rows) {
    r.experiment = name_;  // provenance: the report's "reproduce" line reads it
    (r.corrects.empty() ? claims : corrections).push_back(std::move(r));
  }
  merge_into_ledger(ledger_path(), claims);
  merge_into_ledger(corrections_path(), corrections);
}

std::string ExperimentCli::measurement_options() const {
  static const std::set<std::string> common = {"--help", "--seed", "--quick", "--out", "--threads", "--shard", "--judge"};
  std::string text;
  for (const CLI::Option* opt : parser_->get_options()) {
    const std::string name = opt->get_name();
    if (opt->count() == 0 || common.count(name) != 0) continue;
    text += (text.empty() ? "" : " ") + name;
    if (opt->get_type_size() != 0)  // an option with values, not a flag
      for (const auto& value : opt->results()) text += " " + value;
  }
  return text;
}

std::filesystem::path ExperimentCli::output_path(const std::string& file) const {
  prepare_out();  // a path to write to: --out exists (and is marked quick) from here on
  return options_.out / file;
}

std::string ExperimentCli::evidence_path(const std::string& file) const {
  namespace fs = std::filesystem;
  const fs::path full = fs::weakly_canonical(fs::absolute(options_.out / file));
  // Inside a checkout the ledger holds a path relative to its root; elsewhere (a scratch run) the full one.
  if (const auto root = checkout_root(full)) {
    const fs::path rel = full.lexically_relative(*root);
    if (!rel.empty() && *rel.begin() != "..") return rel.generic_string();
  }
  return full.generic_string();
}

int run_experiment(const std::string& name, const std::function<void()>& body) {
  try {
    body();
    return 0;
  } catch (const std::invalid_argument& e) {
    // A given input the sweep cannot use (found while running, as by the library's own checks): the
    // input's fault, as in attend.
    fmt::print(stderr, "{}: {}\n", name, e.what());
    return kExitUsage;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "{}: out of memory (a sweep configuration needed more than the process could allocate; "
                       "try --quick, fewer --threads, or a machine with more memory)\n", name);
    return kExitFailure;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: {}\n", name, e.what());
    return kExitFailure;
  }
}

namespace {

// A stamp of this run's kind, without its files.
ShardStamp stamp_of(const ExperimentCli& cli) {
  ShardStamp stamp;
  stamp.experiment = cli.name();
  stamp.shard = cli.shard().index();
  stamp.shards = cli.shard().count();
  stamp.seed = cli.options().seed;
  stamp.quick = cli.options().quick;
  // The build and its vector ISA: two builds of one commit for different ISAs write different bits.
  stamp.build = fmt::format("{} {}", build_id(), build_isa());
  stamp.options = cli.measurement_options();
  stamp.sweeps.assign(cli.shard().sweep_sizes().begin(), cli.shard().sweep_sizes().end());
  stamp.hosts = {{stamp.shard, this_host(), this_cpu()}};
  return stamp;
}

// Pins the tables this run wrote and every file of its artifact directories.
void stamp_files(ShardStamp& stamp, const ExperimentCli& cli) {
  const std::filesystem::path& out = cli.options().out;
  for (const auto& file : cli.written_tables())
    if (std::none_of(stamp.tables.begin(), stamp.tables.end(), [&](const StampedTable& t) { return t.file == file; }))
      stamp.tables.push_back({file, digest_file(out / file)});
  for (const auto& rel : cli.artifact_dirs()) {
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(out / rel))
      // Hidden files are write_file_atomically's temporaries, never results.
      if (entry.is_regular_file() && !entry.path().filename().string().starts_with("."))
        files.push_back(entry.path().lexically_relative(out).generic_string());
    std::sort(files.begin(), files.end());  // directory order is the file system's; the stamp's is fixed
    for (const auto& f : files) stamp.artifacts.push_back({f, digest_file(out / f)});
  }
}

// A run that writes ledger rows is one unit (shard_stamp.hpp): its unfinished stamp replaces the previous
// run's before anything else is written, keeping that run's files listed, so a run killed midway leaves
// a directory readers refuse, naming which files are still the previous run's.
std::string begin_run(const ExperimentCli& cli) {
  const std::filesystem::path path = run_stamp_path(cli.options().out, cli.name());
  ShardStamp stamp = stamp_of(cli);
  stamp.run = true;
  stamp.finished = false;
  stamp.run_id = new_run_id();
  if (std::filesystem::exists(path)) {
    try {
      const ShardStamp previous = read_stamp(path);
      stamp.previous_run = previous.finished ? previous.run_id : previous.previous_run;
      stamp.tables = previous.tables;
      stamp.artifacts = previous.artifacts;
    } catch (const StampError&) {
      // Not a stamp we can read: nothing of it is kept, and the unfinished stamp names no previous run.
    }
  }
  write_file_atomically(path, stamp_json(stamp));
  return stamp.run_id;
}

// The finished stamp, written last: every table (with --judge, the merged ones too) and artifact.
void finish_run(const std::string& run_id, const ExperimentCli& cli) {
  ShardStamp stamp = stamp_of(cli);
  stamp.run = true;
  stamp.run_id = run_id;
  if (cli.judging()) stamp.tables = read_stamp(merged_stamp_path(cli.options().out, cli.name())).tables;
  stamp_files(stamp, cli);
  write_file_atomically(run_stamp_path(cli.options().out, cli.name()), stamp_json(stamp));
}

// Judges the tables in `dir`, writes the rows into the ledger and prints each verdict on stdout, one line
// per claim, the run's summary for whoever started it (none on given inputs: no verdict is formed there).
void judge_and_record(const ExperimentCli& cli, const ExperimentParts& parts, const std::filesystem::path& dir) {
  const std::vector<ClaimRow> rows = parts.judge(dir);
  cli.write_claims(rows);
  if (cli.uses_given()) return;
  for (const auto& r : rows)
    fmt::print("{}{}: {} ({})\n", r.id, r.corrects.empty() ? "" : " (corrects " + r.corrects + ")", to_string(r.verdict), r.note);
}

}  // namespace

namespace {

// The body of run_experiment: measure (all of the sweep, or a shard), judge, stamp.
void run_parts(const ExperimentCli& cli, const ExperimentParts& parts) {
  if (!cli.splits_measurement())
    throw std::logic_error("split_measurement() was not called before parse() (a defect of the experiment)");
  const std::filesystem::path& out = cli.options().out;
  // Nothing is written before the run's first file: a refusal found while measuring leaves --out as it was
  // (prepare_out runs these hooks just before that file).
  if (!cli.sharded()) {
    // A run on the user's matrices writes tables only, no ledger rows: it is not stamped.
    std::string run_id;
    if (!cli.uses_given()) cli.before_first_write([&] { run_id = begin_run(cli); });
    if (!cli.judging()) parts.measure(Shard());
    judge_and_record(cli, parts, out);
    if (!cli.uses_given()) {
      cli.prepare_out();  // a run that wrote nothing is stamped all the same
      finish_run(run_id, cli);
    }
    return;
  }
  // A shard: the old stamp goes first, the new one last, so a task killed midway leaves no stamp and
  // attnlab_merge refuses its directory until the task has been rerun to completion.
  const std::filesystem::path stamp_path = shard_stamp_path(out, cli.name());
  cli.before_first_write([&] {
    std::error_code ec;
    std::filesystem::remove(stamp_path, ec);
    if (ec) throw OutputError(fmt::format("{}: cannot remove the old stamp: {}", stamp_path.string(), ec.message()));
  });
  parts.measure(cli.shard());
  cli.prepare_out();
  ShardStamp stamp = stamp_of(cli);
  stamp_files(stamp, cli);
  write_file_atomically(stamp_path, stamp_json(stamp));
}

}  // namespace

int run_experiment(const ExperimentCli& cli, const ExperimentParts& parts) {
  return run_experiment(cli.name(), [&] {
    try {
      run_parts(cli, parts);
    } catch (const std::bad_alloc&) {
      // --quick shrinks our sweep, not the user's matrices: name what does apply.
      if (!cli.uses_given()) throw;
      throw std::runtime_error(fmt::format("out of memory on the given inputs ({}): the run needed more than the process "
                                           "could allocate; try fewer --threads or a machine with more memory",
                                           cli.given().label()));
    }
  });
}

}  // namespace attnlab
