// The linear baseline of the training tables (model/pixel_logistic.hpp): its backward against central
// differences in double, at sizes 1, 2, 3 and random ones, as every layer's; the same engine as the ViT
// (bit-identical for 1 and 2 threads, fit learns a linear task); its checkpoint readable as float32 .npy.
#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <span>
#include <sstream>
#include <vector>

#include "attnlab/core/rng.hpp"
#include "attnlab/io/json_reader.hpp"
#include "attnlab/io/npy.hpp"
#include "attnlab/model/fit.hpp"
#include "attnlab/model/patch_embedding.hpp"
#include "attnlab/model/pixel_logistic.hpp"
#include "attnlab/model/trainer.hpp"
#include "model_test_support.hpp"
#include "support.hpp"

using namespace attnlab;
using namespace attnlab::testing;

namespace {

struct PixelImages {
  std::vector<std::uint8_t> pixels, labels;
  ImageSet set(int side) const { return {pixels, labels, side}; }
};

PixelImages random_pixel_images(std::int64_t count, int side, Eigen::Index classes, Rng& rng) {
  PixelImages im;
  im.pixels.resize(static_cast<std::size_t>(count * side * side));
  for (auto& p : im.pixels) p = static_cast<std::uint8_t>(rng.next_u64() % 256);
  for (std::int64_t i = 0; i < count; ++i) im.labels.push_back(static_cast<std::uint8_t>(rng.next_u64() % static_cast<std::uint64_t>(classes)));
  return im;
}

std::vector<std::int64_t> first_images(std::int64_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
  return v;
}

}  // namespace

TEST_CASE("pixel-logistic baseline: backward matches central differences (images of side 1, 2, 3 and random; 1 to 10 classes)") {
  Rng rng(kModelTestSeed + 60);
  INFO("seed " << kModelTestSeed + 60);
  for (Eigen::Index side : model_test_sizes(rng))
    for (Eigen::Index classes : {Eigen::Index(1), Eigen::Index(2), Eigen::Index(3), Eigen::Index(10)})
      for (Eigen::Index batch : model_test_sizes(rng)) {
        INFO("side " << side << " classes " << classes << " batch " << batch);
        const PixelImages im = random_pixel_images(batch, static_cast<int>(side), classes, rng);
        PixelLogistic<double> m(static_cast<int>(side), classes, rng.next_u64());
        // Larger weights than the initialisation's, so the softmax is far from uniform and every term counts.
        for (auto& t : m.parameter_tensors()) Eigen::Map<Mat<double>>(t.data, t.rows, t.cols) = gaussian_matrix(t.rows, t.cols, rng, 0.3);
        PixelLogisticActivations<double> act;
        m.set_inputs(act, im.pixels, static_cast<int>(side), first_images(batch));
        const double scale = 1.0 / static_cast<double>(batch);
        auto g = m.zero_grads();
        const double loss0 = m.forward_backward(act, im.labels, scale, &g);
        auto loss = [&] { PixelLogisticActivations<double> a = act; return m.forward_backward(a, im.labels, scale, nullptr); };
        CHECK(loss() == loss0);
        auto params = m.parameter_tensors();
        const auto grads = m.gradient_tensors(g);
        for (std::size_t i = 0; i < params.size(); ++i)
          ATTNLAB_CHECK_RATIO_LT(fd_ratio(params[i].data, grads[i].data, params[i].size(), loss), kFdTolerance, "dL/d" + params[i].name);
        // The backward ADDS: a second pass doubles the gradient.
        auto twice = g;
        m.forward_backward(act, im.labels, scale, &twice);
        CHECK((twice.W - 2 * g.W).norm() <= 1e-12 * std::max(1.0, g.W.norm()));
      }
}

TEST_CASE("pixel-logistic baseline: the finite-difference check fails on a backward that is wrong by one part in a thousand") {
  Rng rng(kModelTestSeed + 61);
  const PixelImages im = random_pixel_images(3, 4, 3, rng);
  PixelLogistic<double> m(4, 3, 5);
  PixelLogisticActivations<double> act;
  m.set_inputs(act, im.pixels, 4, first_images(3));
  auto g = m.zero_grads();
  m.forward_backward(act, im.labels, 1.0, &g);
  auto loss = [&] { PixelLogisticActivations<double> a = act; return m.forward_backward(a, im.labels, 1.0, nullptr); };
  auto params = m.parameter_tensors();
  ATTNLAB_REQUIRE_RATIO_LT(fd_ratio(params[0].data, g.W.data(), g.W.size(), loss), kFdTolerance, "dL/dW");
  Mat<double> wrong = g.W;
  Eigen::Index r = 0, c = 0;
  wrong.cwiseAbs().maxCoeff(&r, &c);
  wrong(r, c) *= 1.001;
  ATTNLAB_CHECK_RATIO_GT(fd_ratio(params[0].data, wrong.data(), wrong.size(), loss), kFdTolerance, "dL/dW with its largest entry off by 0.1%");
}

TEST_CASE("pixel-logistic baseline: its input is vit_spec.md's normalised pixels, its initialisation N(0, 0.02^2) from the seed") {
  const std::vector<std::uint8_t> pixels = {0, 255, 128, 7};
  PixelLogistic<double> m(2, 10, 9);
  PixelLogisticActivations<double> act;
  const std::int64_t one[] = {0};
  m.set_inputs(act, pixels, 2, one);
  REQUIRE(act.pixels.rows() == 1);
  REQUIRE(act.pixels.cols() == 4);
  for (int i = 0; i < 4; ++i) CHECK(act.pixels(0, i) == doctest::Approx((pixels[static_cast<std::size_t>(i)] / 255.0 - kPixelMean) / kPixelStd));
  Rng rng(9);
  CHECK(m.W() == gaussian_matrix<double>(4, 10, rng, 0.02));
  CHECK(m.b().isZero());
  CHECK(m.parameter_count() == 4 * 10 + 10);
  CHECK_THROWS_AS(m.set_inputs(act, pixels, 1, one), std::invalid_argument);
  CHECK_THROWS_AS(PixelLogistic<float>(0, 10, 1), std::invalid_argument);
  CHECK_THROWS_AS(PixelLogistic<float>(28, 0, 1), std::invalid_argument);
}

TEST_CASE("pixel-logistic baseline: the ViT's engine trains it bit-identically for 1 and 2 threads, and fit learns a linear task") {
  Rng rng(kModelTestSeed + 62);
  INFO("seed " << kModelTestSeed + 62);
  // Label 1 when the left half is brighter than the right: a linear function of the pixels.
  PixelImages train, test;
  for (PixelImages* im : {&train, &test})
    for (int i = 0; i < 256; ++i) {
      const bool left = rng.uniform() < 0.5;
      for (int y = 0; y < 8; ++y)
        for (int x = 0; x < 8; ++x)
          im->pixels.push_back(static_cast<std::uint8_t>(std::clamp((x < 4) == left ? 170 + static_cast<int>(rng.normal() * 30)
                                                                                     : 80 + static_cast<int>(rng.normal() * 30),
                                                                    0, 255)));
      im->labels.push_back(left ? 1 : 0);
    }
  const auto run = [&](int threads) {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    PixelLogistic<float> m(8, 2, 3);
    Trainer<float, PixelLogistic<float>> trainer(m);
    FitOptions o;
    o.epochs = 2;
    o.batch = 16;
    o.lr = 1e-2;
    o.shuffle_seed = 4;
    std::vector<double> record;
    fit<float>(trainer, train.set(8), test.set(8), o, [&](const StepRecord& s) { record.push_back(s.loss); },
               [&](const EpochRecord& e) { record.push_back(e.test.accuracy()); });
    omp_set_num_threads(saved);
    std::vector<float> w(m.W().data(), m.W().data() + m.W().size());
    return std::make_pair(w, record);
  };
  const auto one = run(1), two = run(2);
  CHECK(one.first == two.first);
  CHECK(one.second == two.second);
  CHECK(one.second.back() >= 0.95);  // test accuracy after the second epoch
  PixelLogistic<float> m(8, 2, 3);
  const Mat<float> logits = predict_logits(m, test.set(8), first_images(10));
  CHECK(logits.rows() == 10);
  CHECK(logits.cols() == 2);
}

TEST_CASE("pixel-logistic baseline: its checkpoint is float32 .npy in the y = x W convention with a manifest") {
  ScratchDir dir;
  PixelLogistic<float> m(28, 10, 11);
  save_pixel_logistic(m, dir.path() / "seed-0", 3750);
  const NpyArray w = read_npy(dir.path() / "seed-0" / "head.W.npy"), b = read_npy(dir.path() / "seed-0" / "head.b.npy");
  CHECK(w.dtype == NpyDtype::float32);
  CHECK(w.shape == std::vector<std::size_t>{784, 10});
  CHECK(b.shape == std::vector<std::size_t>{10});
  CHECK(matrix_from_npy<float>(w, "head.W") == m.W());
  std::ifstream in(dir.path() / "seed-0" / "manifest.json");
  std::stringstream text;
  text << in.rdbuf();
  const Json root = parse_json(text.str());
  const JsonObject& o = json_object(root, "manifest");
  CHECK(json_string_field(o, "method") == kPixelLogisticBaseline);
  CHECK(json_int_field(o, "step") == 3750);
  CHECK(json_int_field(o, "image") == 28);
}

TEST_CASE("evaluate: an image whose logits are not finite is counted wrong, counted in nonfinite and left out of the loss") {
  // Side 2 (4 pixels), 3 classes, every weight 0 but W(0, 0) = 2e38: a bright first pixel (normalised 2.02)
  // makes class 0's logit overflow to +inf in float, a dark one (-0.81) leaves it at -1.6e38, finite.
  PixelLogistic<float> m(2, 3, 5);
  for (auto& t : m.parameter_tensors()) Eigen::Map<Mat<float>>(t.data, t.rows, t.cols).setZero();
  auto tensors = m.parameter_tensors();
  const auto w = std::find_if(tensors.begin(), tensors.end(), [](const auto& t) { return t.rows == 4 && t.cols == 3; });
  REQUIRE(w != tensors.end());
  Eigen::Map<Mat<float>>(w->data, 4, 3)(0, 0) = 2e38f;
  PixelImages im;
  const std::uint8_t first[] = {255, 0, 0, 255}, labels[] = {0, 1, 2, 1};
  for (int i = 0; i < 4; ++i) {
    im.pixels.insert(im.pixels.end(), {first[i], 100, 100, 100});
    im.labels.push_back(labels[i]);
  }
  const Evaluation e = evaluate(m, im.set(2));
  CHECK(e.count == 4);
  CHECK(e.nonfinite == 2);
  // The finite rows have logits (-1.6e38, 0, 0): the first maximum is class 1, right for image 1 only, and
  // each row's loss is log 2 (labels 1 and 2).
  CHECK(e.correct == 1);
  CHECK(e.loss == doctest::Approx(std::log(2.0)).epsilon(1e-12));
  // Nothing finite at all: the loss is NaN, every image wrong.
  Eigen::Map<Mat<float>>(w->data, 4, 3)(1, 0) = std::numeric_limits<float>::quiet_NaN();
  const Evaluation none = evaluate(m, im.set(2));
  CHECK(none.nonfinite == 4);
  CHECK(none.correct == 0);
  CHECK(std::isnan(none.loss));
}

TEST_CASE("fit: a run whose training loss turns non-finite stops at that step with the last finite weights, and says where") {
  Rng rng(kModelTestSeed + 63);
  INFO("seed " << kModelTestSeed + 63);
  const PixelImages train = random_pixel_images(32, 16, 3, rng), test = random_pixel_images(16, 16, 3, rng);
  // A learning rate of 3e37: Adam's first step moves every weight by about lr (m / sqrt(v) = sign(g) after
  // the bias corrections; lr / (1 - 0.9) = 3e38 is still a float), and the next forward's logits, sums of 256
  // such terms, overflow.
  FitOptions o;
  o.epochs = 2;
  o.batch = 8;
  o.lr = 3e37;
  o.shuffle_seed = 6;
  PixelLogistic<float> m(16, 3, 7);
  Trainer<float, PixelLogistic<float>> trainer(m);
  std::vector<StepRecord> steps;
  int epochs = 0;
  const FitResult r = fit<float>(trainer, train.set(16), test.set(16), o, [&](const StepRecord& s) { steps.push_back(s); },
                                 [&](const EpochRecord&) { ++epochs; });
  CHECK(r.diverged);
  CHECK(r.epoch == 1);
  CHECK(r.steps == 1);
  CHECK(r.steps_computed == 2);
  CHECK_FALSE(std::isfinite(r.loss));
  CHECK(epochs == 0);
  REQUIRE(steps.size() == 1);
  CHECK(std::isfinite(steps[0].loss));
  CHECK_FALSE(trainer.last_step_applied());
  CHECK(m.W().allFinite());
  CHECK(m.b().allFinite());
  CHECK(r.test.count == 16);
  CHECK(r.test.correct + r.test.nonfinite <= r.test.count);
  // The weights it stopped with are those after step 0: the same step taken by hand.
  PixelLogistic<float> by_hand(16, 3, 7);
  Trainer<float, PixelLogistic<float>> one(by_hand);
  Rng order_rng(o.shuffle_seed);
  const auto order = shuffled_indices(32, order_rng);
  one.step(train.set(16), std::span(order).first(8), o.lr);
  CHECK(one.last_step_applied());
  CHECK(by_hand.W() == m.W());
  CHECK(by_hand.b() == m.b());
  // A rate whose update itself overflows is refused loudly, never written as weights.
  o.lr = 1e38;  // lr / (1 - 0.9) = 1e39: past the largest float
  PixelLogistic<float> absurd(16, 3, 7);
  Trainer<float, PixelLogistic<float>> overflow(absurd);
  CHECK_THROWS_WITH_AS(fit<float>(overflow, train.set(16), test.set(16), o, [](const StepRecord&) {}, [](const EpochRecord&) {}),
                       doctest::Contains("non-finite (from finite gradients)"), std::runtime_error);
  // The same protocol at a sane rate completes: every step applied, the last epoch's evaluation returned.
  o.lr = 1e-2;
  PixelLogistic<float> sane(16, 3, 7);
  Trainer<float, PixelLogistic<float>> fine(sane);
  Evaluation last;
  const FitResult ok = fit<float>(fine, train.set(16), test.set(16), o, [](const StepRecord&) {}, [&](const EpochRecord& e) { last = e.test; });
  CHECK_FALSE(ok.diverged);
  CHECK(ok.steps == 8);
  CHECK(ok.steps_computed == 8);
  CHECK(ok.evaluations == 2);
  CHECK(ok.test.correct == last.correct);
  CHECK(ok.test.nonfinite == 0);
}
