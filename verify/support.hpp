// Helpers shared by the checks: scratch directories and running executables.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace attnlab::testing {

// A fresh directory under the system temp dir, removed with everything in it on destruction.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  // Names of the regular files in the directory (hidden ones included), sorted.
  std::vector<std::string> files() const;

 private:
  std::filesystem::path path_;
};

struct RunResult {
  int exit_status = -1;  // -1 when killed by a signal
  std::string output;    // stdout and stderr together
};

// Runs bin/<name> with `args` (no shell), capturing its output.
RunResult run_binary(const std::string& name, const std::vector<std::string>& args);

std::string read_text(const std::filesystem::path& path);

}  // namespace attnlab::testing
