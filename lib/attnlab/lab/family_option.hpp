// The --family option of accuracy experiments: restrict a sweep to one named input family.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace attnlab {

class ExperimentCli;

// Adds --family NAME to `app` (an experiment passes cli.app()), stored in `target` ("" = all families).
// An unknown name is a usage error: ExperimentCli::parse prints one line and exits with status 2.
void add_family_option(CLI::App& app, std::string& target);

// The families a sweep runs over: all of attention_families() for "", else just the one named.
std::vector<std::string> selected_families(const std::string& family);

// The command line of an experiment over the attention input families, run in measure and judge parts:
// adds --family, calls cli.split_measurement() and cli.parse(argc, argv), and returns the families the run
// sweeps (the given inputs' label on the user's matrices, else the one --family names, else all).
std::vector<std::string> parse_with_family(ExperimentCli& cli, int argc, char** argv);

}  // namespace attnlab
