// The training run.
#include "attnlab/model/fit.hpp"

#include "attnlab/model/recall_model.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>

namespace attnlab {

std::int64_t steps_per_epoch(std::int64_t train_images, Eigen::Index batch) {
  return batch > 0 ? train_images / static_cast<std::int64_t>(batch) : 0;
}

template <typename T, typename Model>
FitResult fit(Trainer<T, Model>& trainer, const typename Model::Data& train, const typename Model::Data& test,
              const FitOptions& options,
         const std::function<void(const StepRecord&)>& on_step, const std::function<void(const EpochRecord&)>& on_epoch) {
  using Clock = std::chrono::steady_clock;
  const std::int64_t n_train = options.train_images < 0 ? train.count() : std::min(options.train_images, train.count());
  const std::int64_t per_epoch = steps_per_epoch(n_train, options.batch);
  if (per_epoch <= 0 || options.epochs <= 0)
    throw std::invalid_argument("fit: " + std::to_string(n_train) + " training items make no batch of " +
                                std::to_string(options.batch) + " (or epochs = " + std::to_string(options.epochs) + ")");
  if (options.fresh && train.count() / options.epochs < n_train)
    throw std::invalid_argument("fit: a stream of " + std::to_string(train.count()) + " items holds no " +
                                std::to_string(options.epochs) + " epochs of " + std::to_string(n_train) + " fresh items");
  const std::int64_t total = per_epoch * options.epochs;
  Rng rng(options.shuffle_seed);
  std::int64_t step = 0;
  FitResult result;
  for (int epoch = 1; epoch <= options.epochs; ++epoch) {
    std::vector<std::int64_t> order;
    if (options.fresh) {
      order.resize(static_cast<std::size_t>(n_train));
      std::iota(order.begin(), order.end(), static_cast<std::int64_t>(epoch - 1) * n_train);
    } else {
      order = shuffled_indices(n_train, rng);
    }
    const auto t0 = Clock::now();
    for (std::int64_t s = 0; s < per_epoch; ++s, ++step) {
      const auto batch = std::span(order).subspan(static_cast<std::size_t>(s * options.batch),
                                                  static_cast<std::size_t>(options.batch));
      const double lr = cosine_lr(options.lr, step, total);
      const double loss = trainer.step(train, batch, lr);
      ++result.steps_computed;
      if (!trainer.last_step_applied()) {
        const auto t1 = Clock::now();
        result.diverged = true;
        result.epoch = epoch;
        result.steps = step;
        result.loss = loss;
        result.test = evaluate(trainer.model(), test, options.test_images);
        result.evaluations += 1;
        result.train_seconds += std::chrono::duration<double>(t1 - t0).count();
        result.eval_seconds += std::chrono::duration<double>(Clock::now() - t1).count();
        return result;
      }
      on_step({epoch, step, lr, loss});
    }
    const auto t1 = Clock::now();
    EpochRecord r;
    r.epoch = epoch;
    r.steps = per_epoch;
    r.test = evaluate(trainer.model(), test, options.test_images);
    r.train_seconds = std::chrono::duration<double>(t1 - t0).count();
    r.eval_seconds = std::chrono::duration<double>(Clock::now() - t1).count();
    on_epoch(r);
    result.test = r.test;
    result.evaluations += 1;
    result.train_seconds += r.train_seconds;
    result.eval_seconds += r.eval_seconds;
  }
  result.epoch = options.epochs;
  result.steps = total;
  return result;
}

template FitResult fit<float>(Trainer<float>&, const ImageSet&, const ImageSet&, const FitOptions&,
                         const std::function<void(const StepRecord&)>&, const std::function<void(const EpochRecord&)>&);
template FitResult fit<double>(Trainer<double>&, const ImageSet&, const ImageSet&, const FitOptions&,
                          const std::function<void(const StepRecord&)>&, const std::function<void(const EpochRecord&)>&);
template FitResult fit<float, RecallModel<float>>(Trainer<float, RecallModel<float>>&, const RecallSet&, const RecallSet&,
                                             const FitOptions&, const std::function<void(const StepRecord&)>&,
                                             const std::function<void(const EpochRecord&)>&);
template FitResult fit<double, RecallModel<double>>(Trainer<double, RecallModel<double>>&, const RecallSet&, const RecallSet&,
                                               const FitOptions&, const std::function<void(const StepRecord&)>&,
                                               const std::function<void(const EpochRecord&)>&);
template FitResult fit<float, PixelLogistic<float>>(Trainer<float, PixelLogistic<float>>&, const ImageSet&, const ImageSet&,
                                               const FitOptions&, const std::function<void(const StepRecord&)>&,
                                               const std::function<void(const EpochRecord&)>&);

}  // namespace attnlab
