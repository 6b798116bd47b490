// attnlab_merge: the shards of sharded sweeps (exp_* --shard I/N --out DIR) merged into one directory,
// which each experiment's --judge then judges as if the sweep had run whole (issue 16).
//
//   attnlab_merge --out merged shards/exp_qk_identities/1 shards/exp_qk_identities/2 ...
//   build/bin/exp_qk_identities --judge merged
#include <CLI/CLI.hpp>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <string>
#include <vector>

#include "attnlab/io/atomic_file.hpp"
#include "attnlab/lab/cli_validators.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/lab/shard_merge.hpp"

namespace attnlab_merge {  // compiled beside other programs, linked alone (CMakeLists.txt: attnlab_programs)

int main(int argc, char** argv) {
  using namespace attnlab;
  constexpr const char* kName = "attnlab_merge";
  std::filesystem::path out;
  std::vector<std::filesystem::path> dirs;
  CLI::App app("merge the shards of sharded experiment runs (--shard I/N) into one directory for --judge", kName);
  app.formatter(std::make_shared<PlainHelpFormatter>());
  app.add_option("--out", out, "directory for the merged tables and stamps")->type_name("DIR")->required();
  bool replace = false;
  app.add_flag("--replace", replace, "when --out holds another run (claims.csv or stamps), replace that directory whole");
  app.add_option("shards", dirs, "shard directories (each holding <experiment>.shard.json stamps)")
      ->type_name("DIR...")
      ->required();
  if (const auto status = parse_command_line(app, argc, argv)) return *status;
  try {
    const auto merged = merge_shards(dirs, out, replace);
    fmt::print("{}: merged {} into {}\n", kName, fmt::join(merged, ", "), out.string());
    return 0;
  } catch (const MergeError& e) {
    fmt::print(stderr, "{}: {}\n", kName, e.what());
    return kExitUsage;
  } catch (const OutputError& e) {
    fmt::print(stderr, "{}: {}\n", kName, e.what());
    return kExitFailure;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: {}\n", kName, e.what());
    return kExitFailure;
  }
}

}  // namespace attnlab_merge
