// Run an executable (no shell) and capture what it prints.
#include "attnlab/lab/subprocess.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <stdexcept>

namespace attnlab {

ProcessResult run_process(const std::string& exe, const std::vector<std::string>& args, bool capture_stderr) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("run_process: pipe failed");
  // argv is built before fork: the child may only call async-signal-safe functions.
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("run_process: fork failed for " + exe);
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    if (capture_stderr) ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  ProcessResult r;
  std::array<char, 4096> buf;
  ssize_t n;
  while ((n = ::read(fds[0], buf.data(), buf.size())) > 0) r.output.append(buf.data(), static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  struct rusage usage {};
  ::wait4(pid, &status, 0, &usage);
  r.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.peak_rss_bytes = static_cast<double>(usage.ru_maxrss) * 1024.0;  // Linux reports KiB
  return r;
}

}  // namespace attnlab
