// bench_vit (issue 14, "Performance"): training throughput of the exact-softmax ViT (the default ViTConfig,
// float) at the experiment's batch (16) and at the PyTorch peer's (256), as counted training FLOPs per second
// against this machine's sgemm rate measured in the same run.
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <vector>

#include "attnlab/attention/trainable.hpp"
#include "attnlab/core/rng.hpp"
#include "attnlab/io/csv_table.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/lab/timing.hpp"
#include "attnlab/model/adam.hpp"
#include "attnlab/model/flops.hpp"
#include "attnlab/model/trainer.hpp"
#include "attnlab/model/vit.hpp"
#include "gemm_rate.hpp"

using namespace attnlab;

namespace {

// Wall, user and system seconds of one timed training step.
struct StepTime {
  double wall = 0, user = 0, system = 0;
};

double seconds_of(const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

// `repeats` training steps of `trainer` on images 0 .. batch-1 of `data`, after one untimed warm-up step
// (it allocates the per-chunk activations and gradients, reused from then on). The steps change the
// weights; the work of a step does not depend on them.
std::vector<StepTime> time_steps(Trainer<float>& trainer, const ImageSet& data, std::int64_t batch, int repeats) {
  std::vector<std::int64_t> images(static_cast<std::size_t>(batch));
  std::iota(images.begin(), images.end(), std::int64_t{0});
  const double lr = 5e-4;
  keep_alive(trainer.step(data, images, lr));
  std::vector<StepTime> times;
  for (int r = 0; r < repeats; ++r) {
    rusage r0{}, r1{};
    getrusage(RUSAGE_SELF, &r0);
    const auto t0 = std::chrono::steady_clock::now();
    const double loss = trainer.step(data, images, lr);
    const auto t1 = std::chrono::steady_clock::now();
    getrusage(RUSAGE_SELF, &r1);
    if (!std::isfinite(loss)) throw NonFiniteError(fmt::format("bench_vit: the loss became {} at batch {}", loss, batch));
    times.push_back({std::chrono::duration<double>(t1 - t0).count(), seconds_of(r1.ru_utime) - seconds_of(r0.ru_utime),
                     seconds_of(r1.ru_stime) - seconds_of(r0.ru_stime)});
  }
  return times;
}

}  // namespace

int main(int argc, char** argv) {
  ExperimentCli cli("bench_vit", "issue 14: ViT training throughput (exact attention, float) against the sgemm rate");
  int repeats = 7;
  cli.app().add_option("--repeats", repeats, "timed training steps per batch size, after one warm-up step (median reported)")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  cli.parse(argc, argv);
  return run_experiment(cli.name(), [&] {
    const auto& opt = cli.options();
    Rng rng(derive_seed(opt.seed, 1));
    const auto [eigen_gemm, blas_gemm] = bench::gemm_ceiling(opt.quick, opt.threads, rng);
    const double gemm = std::max(eigen_gemm, blas_gemm);
    // The experiment's batch and the PyTorch peer's (bench/bench_vit_torch.py); --quick: 16 and 32.
    const std::vector<std::int64_t> batches = opt.quick ? std::vector<std::int64_t>{16, 32} : std::vector<std::int64_t>{16, 256};
    const int timed = opt.quick ? std::min(repeats, 2) : repeats;

    ViTConfig config;  // vit_spec.md's model: n 196, D 64, 4 heads, 2 blocks, MLP 128, exact attention
    config.seed = opt.seed;
    config.attention.method = "exact";
    // Random images and labels: pixel values do not change the work.
    const std::int64_t most = *std::max_element(batches.begin(), batches.end());
    const auto side = static_cast<std::size_t>(config.image);
    std::vector<std::uint8_t> pixels(static_cast<std::size_t>(most) * side * side), labels(static_cast<std::size_t>(most));
    for (auto& p : pixels) p = static_cast<std::uint8_t>(rng.uniform() * 256.0);
    for (auto& l : labels) l = static_cast<std::uint8_t>(rng.uniform() * static_cast<double>(config.classes));
    const ImageSet data{pixels, labels, config.image};

    CsvTable table({text_col("method"), text_col("impl"), text_col("dtype"), int_col("batch"), int_col("threads"),
                    int_col("D"), int_col("heads"), int_col("layers"), int_col("mlp"), int_col("n"), int_col("repeats"),
                    real_col("median_s"), real_col("min_s"), real_col("max_s"), real_col("user_s"), real_col("sys_s"),
                    real_col("images_per_s"), real_col("counted_gflop_per_step"), real_col("gflops"),
                    real_col("gemm_gflops"), real_col("eigen_gemm_gflops"), real_col("openblas_gemm_gflops"),
                    real_col("gemm_share")});
    for (const std::int64_t batch : batches) {
      ViT<float> model(config, [](const TrainableAttentionConfig& c) { return make_trainable_attention<float>(c); });
      Trainer<float> trainer(model);
      const auto times = time_steps(trainer, data, batch, timed);
      std::vector<double> wall, user, sys;
      for (const auto& t : times) {
        wall.push_back(t.wall);
        user.push_back(t.user);
        sys.push_back(t.system);
      }
      const double seconds = median(wall);
      const double flops = vit_training_flops(config, batch);
      const double gflops = flops / seconds * 1e-9;
      table.add_row({config.attention.method, "attnlab", "float32", batch, opt.threads, config.D, config.heads,
                     config.layers, config.mlp, config.tokens(), timed, seconds,
                     *std::min_element(wall.begin(), wall.end()), *std::max_element(wall.begin(), wall.end()),
                     median(user), median(sys), static_cast<double>(batch) / seconds, flops * 1e-9, gflops, gemm,
                     eigen_gemm, blas_gemm, gflops / gemm});
      fmt::print(stderr, "bench_vit: exact ViT, float, batch {}, {} threads: {:.4f} s per step (median of {}; user {:.4f} s, "
                 "system {:.4f} s), {:.0f} images/s, {:.1f} GFLOP/s counted = {:.0f}% of sgemm\n",
                 batch, opt.threads, seconds, timed, median(user), median(sys), static_cast<double>(batch) / seconds,
                 gflops, 100 * gflops / gemm);
    }
    table.write(cli.output_path("bench_vit.csv"));
  });
}
