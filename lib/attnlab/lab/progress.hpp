// A one-line progress indicator on stderr, shown only when stderr is a terminal.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

namespace attnlab {

// Progress p("R7 timing", total); p.tick() from any thread. Redraws at most five
// times a second; prints nothing at all when stderr is redirected, so logs and
// CI output stay clean.
class Progress {
 public:
  Progress(std::string label, std::size_t total);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void tick(std::size_t steps = 1);

 private:
  std::string label_;
  std::size_t total_;
  bool enabled_;
  std::atomic<std::size_t> done_{0};
  std::mutex draw_mutex_;
  std::chrono::steady_clock::time_point last_draw_;
  bool drew_ = false;
};

}  // namespace attnlab
