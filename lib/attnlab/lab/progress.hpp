// Progress of a long loop on stderr: a one-line indicator redrawn on a terminal, and, for the runs whose logs
// people read afterwards (make results, Slurm), one line per milestone with the time elapsed and the ETA of
// the whole loop, and a last line with the wall time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>

namespace attnlab {

// Progress p("R7 timing", total); p.tick() from any thread. Redraws at most five times a second; prints
// nothing at all when stderr is redirected, so logs and CI output stay clean.
//
// With Progress::lines (exp_vit_training's sweep, the experiments on its checkpoints): also
//   p.milestone("exact seed 1/3 epoch 2/3: test accuracy 0.8412")
// prints, whatever stderr is,
//   exp_vit_training: exact seed 1/3 epoch 2/3: test accuracy 0.8412; 2,500/27,000 (9%), 3 min elapsed, ETA 31 min
// (the ETA of the whole loop, from the units ticked so far), and p.finish() prints
//   exp_vit_training: done, 27,000/27,000 in 34 min 12 s wall
class Progress {
 public:
  enum Mode { terminal_only, lines };
  Progress(std::string label, std::size_t total, Mode mode = terminal_only);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void tick(std::size_t units = 1);
  // A line (Mode lines only; nothing otherwise). Safe from any thread.
  void milestone(const std::string& what);
  // The wall-time line (Mode lines only), once.
  void finish();

  // "45 s", "12 min 5 s", "2 h 03 min": how the lines write a duration.
  static std::string duration_text(double seconds);

 private:
  void clear_line();  // the terminal indicator, before a milestone line

  std::string label_;
  std::size_t total_;
  bool enabled_;
  bool lines_;
  std::atomic<std::size_t> done_{0};
  std::mutex draw_mutex_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool drew_ = false, finished_ = false;
};

}  // namespace attnlab
