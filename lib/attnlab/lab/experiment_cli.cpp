// The command line every experiment shares: --seed, --quick, --out, --threads, and given .npy inputs.
#include "attnlab/lab/experiment_cli.hpp"

#include <Eigen/Core>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fmt/format.h>
#include <new>
#include <omp.h>

#include "attnlab/io/atomic_file.hpp"

namespace attnlab {

const CLI::Validator FiniteNumber(
    [](std::string& input) -> std::string {
      std::size_t used = 0;
      double v = 0;
      try {
        v = std::stod(input, &used);
      } catch (const std::exception&) {
        return "'" + input + "' is not a number";
      }
      if (used != input.size()) return "'" + input + "' is not a number";
      if (!std::isfinite(v)) return "'" + input + "' is not a finite number";
      return {};
    },
    "FINITE");

const CLI::Validator NonNegativeInteger(
    [](std::string& input) -> std::string {
      if (input.empty() || input.find_first_not_of("0123456789") != std::string::npos)
        return "'" + input + "' is not a non-negative integer";
      // CLI11 would clamp a larger value to the type's maximum; a seed must name itself exactly.
      std::uint64_t value = 0;
      const auto [end, ec] = std::from_chars(input.data(), input.data() + input.size(), value);
      if (ec == std::errc::result_out_of_range || end != input.data() + input.size())
        return "'" + input + "' is larger than 18446744073709551615 (2^64 - 1)";
      return {};
    },
    "UINT");

std::string PlainHelpFormatter::make_option_opts(const CLI::Option* opt) const {
  if (!opt->get_option_text().empty() || opt->get_type_size() == 0) return CLI::Formatter::make_option_opts(opt);
  // get_type_name() is "TYPE" followed by ":description" per validator; keep TYPE, or a list of choices.
  const std::string full = opt->get_type_name();
  const auto colon = full.find(':');
  std::string type = full.substr(0, colon);
  if (colon != std::string::npos && full.compare(colon + 1, 1, "{") == 0) {
    const auto close = full.find('}', colon);
    type = full.substr(colon + 1, close == std::string::npos ? std::string::npos : close - colon);
  }
  std::string out = type.empty() ? "" : " " + type;
  if (opt->get_required()) out += " REQUIRED";
  if (!opt->get_excludes().empty()) {
    out += " Excludes:";
    for (const CLI::Option* other : opt->get_excludes()) out += " " + other->get_name();
  }
  return out;
}

std::string PlainHelpFormatter::make_option_desc(const CLI::Option* opt) const {
  std::string desc = opt->get_description();
  const std::string def = opt->get_default_str();
  if (!def.empty() && desc.find("default") == std::string::npos) desc += " (default " + def + ")";
  return desc;
}

ExperimentCli::ExperimentCli(std::string name, std::string description, std::optional<GivenKind> given)
    : name_(std::move(name)), app_(std::move(description), name_) {
  app_.formatter(std::make_shared<PlainHelpFormatter>());
  app_.add_option("--seed", options_.seed, "base seed, 0 to 2^64 - 1; trial seeds are derived from it")
      ->check(NonNegativeInteger)->capture_default_str();
  app_.add_flag("--quick", options_.quick, "small sweep for tests (seconds, not minutes)");
  app_.add_option("--out", options_.out, "output directory for tables and claims.csv (default: results; quick-results with --quick)")
      ->type_name("DIR");
  app_.add_option("--threads", options_.threads, "worker threads, 1 to 1024 (default: all cores)")
      ->check(NonNegativeInteger & CLI::Range(1, 1024));
  if (given) given_.emplace(app_, *given);
}

namespace {

// Marks a directory written by --quick runs. A quick sweep's verdicts are smoke tests, not findings,
// so quick and full results never share a directory: quick runs refuse a directory with a full run's
// ledger in it (`exp_nystrom --quick` from the repository root would otherwise rewrite the committed
// results/claims.csv), and full runs refuse a quick directory.
constexpr const char* kQuickMarker = ".attnlab-quick";

}  // namespace

void ExperimentCli::parse(int argc, char** argv) {
  try {
    app_.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    fmt::print("{}", app_.help());
    std::exit(0);
  } catch (const CLI::ParseError& e) {
    // One line naming the problem; CLI11's own failure message adds a second line.
    fmt::print(stderr, "{}: {}\n", name_, e.what());
    std::exit(kExitUsage);
  }
  try {
    if (given_) given_->load();
  } catch (const GivenInputsError& e) {
    fmt::print(stderr, "{}: {}\n", name_, e.what());
    std::exit(kExitUsage);
  }
  // --family picks among our random input families; with the user's own matrices there is none to pick.
  if (uses_given() && app_.get_option_no_throw("--family") != nullptr && app_.count("--family") > 0) {
    fmt::print(stderr, "{}: --family chooses among random input families and cannot be combined with given inputs\n",
               name_);
    std::exit(kExitUsage);
  }
  // Quick runs land in quick-results unless told otherwise, never in the committed results.
  if (options_.quick && app_.count("--out") == 0) options_.out = "quick-results";
  try {
    ensure_writable_directory(options_.out);
  } catch (const OutputError& e) {
    fmt::print(stderr, "{}: --out: {}\n", name_, e.what());
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
    if (options_.quick && !marked_quick) {
      try {
        write_file_atomically(options_.out / kQuickMarker,
                              "This directory holds attnlab --quick results (smoke tests, not findings); "
                              "full runs refuse it.\n");
      } catch (const OutputError& e) {
        fmt::print(stderr, "{}: --out: {}\n", name_, e.what());
        std::exit(kExitUsage);
      }
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

void ExperimentCli::write_table(const CsvTable& table, const std::string& file) const {
  table.with_column(text_col("inputs"), inputs_label()).write(output_path(file));
}

void ExperimentCli::write_claims(const std::vector<ClaimRow>& rows) const {
  if (uses_given()) return;
  std::vector<ClaimRow> named = rows;
  for (auto& r : named) r.experiment = name_;  // provenance: the report's "reproduce" line reads it
  merge_into_ledger(ledger_path(), named);
}

std::filesystem::path ExperimentCli::output_path(const std::string& file) const { return options_.out / file; }

std::string ExperimentCli::evidence_path(const std::string& file) const {
  namespace fs = std::filesystem;
  const fs::path full = fs::weakly_canonical(fs::absolute(options_.out / file));
  const fs::path root = fs::weakly_canonical(fs::path(ATTNLAB_SOURCE_DIR));
  const fs::path rel = full.lexically_relative(root);
  // Inside the repository the ledger holds a relative path; elsewhere (a scratch run) the full one.
  if (!rel.empty() && *rel.begin() != "..") return rel.generic_string();
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

}  // namespace attnlab
