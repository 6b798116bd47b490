// The CLI11 validators and help formatter our command lines share (cli_validators.hpp).
#include "attnlab/lab/cli_validators.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>

#include <fmt/format.h>

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
      // CLI11 converts with base 0, so "010" would silently be the seed 8.
      if (input.size() > 1 && input[0] == '0')
        return "'" + input + "' has a leading zero (CLI11 would read it as octal)";
      // CLI11 would clamp a larger value to the type's maximum; a seed must name itself exactly.
      std::uint64_t value = 0;
      const auto [end, ec] = std::from_chars(input.data(), input.data() + input.size(), value);
      if (ec == std::errc::result_out_of_range || end != input.data() + input.size())
        return "'" + input + "' is larger than 18446744073709551615 (2^64 - 1)";
      return {};
    },
    "UINT");

CLI::Validator integer_in(long long lo, long long hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        if (std::string why = NonNegativeInteger(s); !why.empty()) return why;
        if (s.size() > 18 || std::stoll(s) < lo || std::stoll(s) > hi) return fmt::format("{} is not in [{}, {}]", s, lo, hi);
        return {};
      },
      fmt::format("in [{}, {}]", lo, hi));
}

std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    fmt::print("{}", app.help());
    return 0;
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "{}: {}\n", app.get_name(), e.what());
    return 2;  // kExitUsage (experiment_cli.hpp): bad usage
  }
  return std::nullopt;
}

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

}  // namespace attnlab
