// A one-line progress indicator on stderr, shown only when stderr is a terminal.
#include "attnlab/lab/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

namespace attnlab {

Progress::Progress(std::string label, std::size_t total)
    : label_(std::move(label)), total_(total), enabled_(::isatty(STDERR_FILENO) == 1),
      last_draw_(std::chrono::steady_clock::now()) {}

Progress::~Progress() {
  if (enabled_ && drew_) fmt::print(stderr, "\r\033[K");
}

void Progress::tick(std::size_t steps) {
  const std::size_t done = done_ += steps;
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

}  // namespace attnlab
