// The --family option of accuracy experiments: restrict a sweep to one named input family.
#include "attnlab/lab/family_option.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <stdexcept>

#include "attnlab/lab/attention_inputs.hpp"
#include "attnlab/lab/experiment_cli.hpp"

namespace attnlab {

namespace {
std::string family_list() {
  std::string list;
  for (const auto& f : attention_families()) list += (list.empty() ? "" : ", ") + f;
  return list;
}

// Accepts only names from attention_families(); the message lists them.
const CLI::Validator AttentionFamilyName(
    [](std::string& input) -> std::string {
      const auto& all = attention_families();
      if (std::find(all.begin(), all.end(), input) != all.end()) return {};
      return "unknown input family '" + input + "' (known: " + family_list() + ")";
    },
    "FAMILY");

}  // namespace

void add_family_option(CLI::App& app, std::string& target) {
  app.add_option("--family", target, "restrict the sweep to one input family: " + family_list() + " (default: all)")
      ->type_name("NAME")
      ->check(AttentionFamilyName);
}

std::vector<std::string> selected_families(const std::string& family) {
  if (family.empty()) return attention_families();
  const auto& all = attention_families();
  if (std::find(all.begin(), all.end(), family) == all.end())
    throw std::invalid_argument("unknown input family '" + family + "' (known: " + family_list() + ")");
  return {family};
}

std::vector<std::string> parse_with_family(ExperimentCli& cli, int argc, char** argv) {
  std::string family;
  add_family_option(cli.app(), family);
  cli.split_measurement();
  cli.parse(argc, argv);
  return cli.given().families_or(selected_families(family));
}

}  // namespace attnlab
