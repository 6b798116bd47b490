// The CLI11 pieces every command line of ours shares: validators for numbers CLI11 would take too
// loosely, and the help formatter. For the apps and the lab's own .cpp files; an experiment adds its
// flags through ExperimentCli (experiment_cli.hpp), which keeps CLI11 out of its compile.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>

namespace attnlab {

// Refuses NaN and infinities (CLI11 itself parses "nan" and "inf").
extern const CLI::Validator FiniteNumber;

// A plain decimal integer >= 0 without leading zeros (CLI11 would wrap "-1" into an unsigned, and it converts
// with base 0: "010" would be 8, "0x10" 16).
extern const CLI::Validator NonNegativeInteger;

// A plain decimal integer in [lo, hi] (lo >= 0), with one message for either failure (CLI11's `&` prints both).
CLI::Validator integer_in(long long lo, long long hi);

// Parses the command line into `app`: --help prints the help (exit status 0), a bad flag one line
// "<app name>: <problem>" on stderr (exit status 2); nullopt when the program goes on.
//   if (const auto status = parse_command_line(app, argc, argv)) return *status;
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv);

// --help as a person writes it: "--seed UINT  base seed ... (default 20250311)" instead of CLI11's
// "--seed UINT:UINT=20250311" or "--threads INT:(UINT) AND (INT in [1 - 1024])". An option shows its
// type name (or its list of choices) only; the validators' own descriptions are left out, so an option's
// description states its range; the default follows the description unless it already names one.
class PlainHelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_opts(const CLI::Option* opt) const override;
  std::string make_option_desc(const CLI::Option* opt) const override;
};

}  // namespace attnlab
