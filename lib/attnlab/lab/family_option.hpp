// The --family option of accuracy experiments: restrict a sweep to one named input family.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace attnlab {

// CLI11 validator accepting only names from attention_families(); the message lists them.
extern const CLI::Validator AttentionFamilyName;

// Adds --family NAME to `app`, stored in `target` ("" = all families). An unknown name is a
// usage error: ExperimentCli::parse prints one line and exits with status 2.
void add_family_option(CLI::App& app, std::string& target);

// The families a sweep runs over: all of attention_families() for "", else just the one named.
std::vector<std::string> selected_families(const std::string& family);

}  // namespace attnlab
