// Progress on stderr (progress.hpp).
#include "attnlab/lab/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace attnlab {

Progress::Progress(std::string label, std::size_t total, Mode mode)
    : label_(std::move(label)), total_(total), enabled_(::isatty(STDERR_FILENO) == 1), lines_(mode == lines),
      start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

Progress::~Progress() {
  if (enabled_ && drew_) fmt::print(stderr, "\r\033[K");
}

void Progress::clear_line() {
  if (enabled_ && drew_) fmt::print(stderr, "\r\033[K");
  drew_ = false;
}

void Progress::tick(std::size_t units) {
  const std::size_t done = done_ += units;
  if (!enabled_) return;
  std::unique_lock lock(draw_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(200) && done < total_) return;
  last_draw_ = now;
  drew_ = true;
  fmt::print(stderr, "\r\033[K{}: {}/{} ({:.0f}%)", label_, done, total_,
             total_ ? 100.0 * static_cast<double>(done) / static_cast<double>(total_) : 100.0);
}

std::string Progress::duration_text(double seconds) {
  const auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{} min {} s", s / 60, s % 60);
  return fmt::format("{} h {:02d} min", s / 3600, (s % 3600) / 60);
}

void Progress::milestone(const std::string& what) {
  if (!lines_) return;
  const std::lock_guard lock(draw_mutex_);
  clear_line();
  const std::size_t done = done_;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::string eta = done == 0          ? "ETA unknown"
                          : done >= total_   ? "ETA 0 s"
                                             : "ETA " + duration_text(elapsed / static_cast<double>(done) *
                                                                      static_cast<double>(total_ - done));
  fmt::print(stderr, "{}: {}; {}/{} ({:.0f}%), {} elapsed, {}\n", label_, what, done, total_,
             total_ ? 100.0 * static_cast<double>(done) / static_cast<double>(total_) : 100.0, duration_text(elapsed), eta);
}

void Progress::finish() {
  if (!lines_ || finished_) return;
  const std::lock_guard lock(draw_mutex_);
  clear_line();
  finished_ = true;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  fmt::print(stderr, "{}: done, {}/{} in {} wall\n", label_, done_.load(), total_, duration_text(elapsed));
}

}  // namespace attnlab
