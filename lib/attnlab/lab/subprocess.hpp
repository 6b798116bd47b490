// Run an executable (no shell) and capture what it prints: tests run experiments, benchmarks
// measure each configuration in a fresh process.
#pragma once

#include <string>
#include <vector>

namespace attnlab {

struct ProcessResult {
  int exit_status = -1;  // -1 when killed by a signal
  std::string output;    // stdout, with stderr too when asked for
  double peak_rss_bytes = 0;  // the child's largest resident set (wait4's ru_maxrss)
};

// Runs `exe` with `args`, waits for it, and returns its exit status and output. With
// `capture_stderr` false, the child's stderr goes to ours. Throws std::runtime_error when the
// process cannot be started (exit status 127 when the executable cannot be run).
ProcessResult run_process(const std::string& exe, const std::vector<std::string>& args, bool capture_stderr);

}  // namespace attnlab
