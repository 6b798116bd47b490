// The whole ViT: one model step against central differences, the chunked data-parallel step, Adam and
// the cosine schedule, bit-identical training for 1 and 2 threads, checkpoints (issue 14).
#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "attnlab/io/npy.hpp"
#include "attnlab/model/adam.hpp"
#include "attnlab/model/checkpoint.hpp"
#include "attnlab/model/fit.hpp"
#include "attnlab/model/patch_embedding.hpp"
#include "attnlab/model/trainer.hpp"
#include "attnlab/model/vit.hpp"
#include "model_test_support.hpp"
#include "support.hpp"

using namespace attnlab;
using namespace attnlab::testing;

namespace {

// A small ViT on 8x8 images (16 tokens: 4x4 windows every 2 pixels, padding 1, as the full model's), with the test-only attention that has a parameter.
ViTConfig tiny_config(std::uint64_t seed) {
  ViTConfig c;
  c.image = 8;
  c.patch = 4;
  c.stride = 2;
  c.pad = 1;
  c.D = 8;
  c.heads = 2;
  c.layers = 2;
  c.mlp = 12;
  c.seed = seed;
  c.attention.method = "test-temperature-softmax";
  return c;
}

template <typename T>
typename ViT<T>::AttentionFactory test_factory() {
  return [](const TrainableAttentionConfig&) { return std::make_unique<TemperatureSoftmaxAttention<T>>(); };
}

struct Images {
  std::vector<std::uint8_t> pixels, labels;
  ImageSet set(int side) const { return {pixels, labels, side}; }
};

Images random_images(std::int64_t count, int side, Rng& rng) {
  Images im;
  im.pixels.resize(static_cast<std::size_t>(count * side * side));
  for (auto& p : im.pixels) p = static_cast<std::uint8_t>(rng.next_u64() % 256);
  im.labels.resize(static_cast<std::size_t>(count));
  for (auto& l : im.labels) l = static_cast<std::uint8_t>(rng.next_u64() % 10);
  return im;
}

template <typename T>
std::vector<T> flat_weights(ViT<T>& m) {
  std::vector<T> out;
  for (const auto& t : m.parameter_tensors()) out.insert(out.end(), t.data, t.data + t.size());
  return out;
}

}  // namespace

TEST_CASE("ViT: manifest order and initialisation follow vit_spec.md") {
  ViT<double> m(ViTConfig{}, test_factory<double>());
  const auto t = m.parameter_tensors();
  REQUIRE(t.size() == 3 + 2 * 17 + 4);
  CHECK(t[0].name == "embed.W");
  CHECK(t[2].name == "embed.pos");
  CHECK(t[2].rows == 196);
  CHECK(t[3].name == "block0.ln1.gamma");
  CHECK(t[13].name == "block0.attn.method.t");
  CHECK(t[14].name == "block0.ln2.gamma");
  CHECK(t.back().name == "head.b");
  CHECK(m.parameter_count() == 16 * 64 + 64 + 196 * 64 + 2 * (4 * 64 + 4 * 64 * 64 + 4 * 64 + 1 + 64 * 128 * 2 + 128 + 64) +
                                   2 * 64 + 64 * 10 + 10);
  // N(0, 0.02^2) weights: the sample standard deviation of W_q within 10% (4096 draws: sd error ~1%).
  const auto& wq = m.params().blocks[0].attn.Wq;
  const double sd = std::sqrt(wq.array().square().mean() - std::pow(wq.mean(), 2));
  CHECK(std::abs(sd / 0.02 - 1) < 0.1);
  CHECK(m.params().blocks[1].ln2_gamma.isOnes());
  CHECK(m.params().head_b.isZero());
  // The same seed gives the same weights; another seed others.
  ViT<double> same(ViTConfig{}, test_factory<double>());
  CHECK(flat_weights(same) == flat_weights(m));
  ViTConfig other;
  other.seed = 1;
  ViT<double> different(other, test_factory<double>());
  CHECK(flat_weights(different) != flat_weights(m));
  ViTConfig bad;
  bad.heads = 5;
  CHECK_THROWS_WITH_AS(ViT<double>(bad, test_factory<double>()), doctest::Contains("heads (= 5)"), std::invalid_argument);
}

TEST_CASE("ViT: one whole model step's loss gradient matches central differences for every parameter tensor") {
  Rng rng(kModelTestSeed + 10);
  INFO("seed " << kModelTestSeed + 10);
  for (std::int64_t B : {std::int64_t(1), std::int64_t(3)}) {
    INFO("images " << B);
    ViT<double> m(tiny_config(kModelTestSeed + static_cast<std::uint64_t>(B)), test_factory<double>());
    // Larger weights than the 0.02 init, so every path (attention scores, LayerNorm scales) is exercised.
    for (auto& t : m.parameter_tensors())
      if (!t.is_vector) Eigen::Map<Mat<double>>(t.data, t.rows, t.cols) = gaussian_matrix(t.rows, t.cols, rng, 0.5);
    for (auto& b : m.params().blocks) b.ln1_gamma = Vec<double>::Ones(8) + gaussian_matrix(8, 1, rng, 0.2);
    const Images im = random_images(B, 8, rng);
    std::vector<std::int64_t> all(static_cast<std::size_t>(B));
    for (std::int64_t i = 0; i < B; ++i) all[static_cast<std::size_t>(i)] = i;
    ViTActivations<double> act;
    patchify<double>(im.pixels, all, 8, 4, 2, 1, act.patches);
    const double scale = 1.0 / static_cast<double>(B);
    auto loss = [&] { ViTActivations<double> a; a.patches = act.patches; return m.forward_backward(a, im.labels, scale, nullptr); };
    ViTGrads<double> g = m.zero_grads();
    const double l0 = m.forward_backward(act, im.labels, scale, &g);
    CHECK(l0 == doctest::Approx(loss()).epsilon(1e-15));
    auto params = m.parameter_tensors();
    const auto grads = m.gradient_tensors(g);
    REQUIRE(params.size() == grads.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      INFO(params[i].name);
      CHECK(params[i].name == grads[i].name);
      const auto sample = sample_entries(params[i].size(), 6, rng);
      ATTNLAB_CHECK_RATIO_LT(fd_ratio(params[i].data, grads[i].data, params[i].size(), loss, sample), kFdTolerance, "dL/d" + params[i].name);
    }
  }
}

TEST_CASE("ViT with the library's exact and Linformer attention: one model step against central differences") {
  // The same whole-step check through make_trainable_attention: Linformer's E and F are method
  // parameters, listed after block{l}.attn.bo and updated by the trainer.
  Rng rng(kModelTestSeed + 15);
  INFO("seed " << kModelTestSeed + 15);
  for (const std::string method : {"exact", "linformer"}) {
    INFO(method);
    ViTConfig c = tiny_config(21);
    c.attention = TrainableAttentionConfig{method};
    ViT<double> m(c);
    for (auto& t : m.parameter_tensors())
      if (!t.is_vector && t.name.find(".method.") == std::string::npos)
        Eigen::Map<Mat<double>>(t.data, t.rows, t.cols) = gaussian_matrix(t.rows, t.cols, rng, 0.5);
    const Images im = random_images(2, 8, rng);
    const std::vector<std::int64_t> all = {0, 1};
    ViTActivations<double> act;
    patchify<double>(im.pixels, all, 8, 4, 2, 1, act.patches);
    auto loss = [&] { ViTActivations<double> a; a.patches = act.patches; return m.forward_backward(a, im.labels, 0.5, nullptr); };
    ViTGrads<double> g = m.zero_grads();
    m.forward_backward(act, im.labels, 0.5, &g);
    auto params = m.parameter_tensors();
    const auto grads = m.gradient_tensors(g);
    if (method == "linformer") CHECK(params[13].name == "block0.attn.method.E");
    for (std::size_t i = 0; i < params.size(); ++i) {
      INFO(params[i].name);
      const auto sample = sample_entries(params[i].size(), 4, rng);
      ATTNLAB_CHECK_RATIO_LT(fd_ratio(params[i].data, grads[i].data, params[i].size(), loss, sample), kFdTolerance, "dL/d" + params[i].name);
    }
  }
}

TEST_CASE("Trainer: the chunked gradient equals the whole batch's, and Adam takes the step") {
  Rng rng(kModelTestSeed + 11);
  INFO("seed " << kModelTestSeed + 11);
  const std::int64_t B = 2 * kChunkImages + 5;  // three chunks, the last one short
  const Images im = random_images(B + 7, 8, rng);
  std::vector<std::int64_t> batch = shuffled_indices(B + 7, rng);
  batch.resize(static_cast<std::size_t>(B));
  ViT<double> m(tiny_config(3), test_factory<double>());
  ViT<double> ref(tiny_config(3), test_factory<double>());
  Trainer<double> trainer(m);
  const double loss = trainer.step(im.set(8), batch, 1e-3);
  // The reference: every image in one forward/backward.
  ViTActivations<double> act;
  patchify<double>(im.pixels, batch, 8, 4, 2, 1, act.patches);
  std::vector<std::uint8_t> labels;
  for (auto i : batch) labels.push_back(im.labels[static_cast<std::size_t>(i)]);
  ViTGrads<double> g = ref.zero_grads();
  const double ref_loss = ref.forward_backward(act, labels, 1.0 / static_cast<double>(B), &g);
  CHECK(loss == doctest::Approx(ref_loss).epsilon(1e-13));
  const auto want = ref.gradient_tensors(g);
  const auto& got = trainer.last_gradient();
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO(want[i].name);
    const Eigen::Map<const Vec<double>> a(got[i].data, got[i].size()), b(want[i].data, want[i].size());
    // Same sums in another grouping: within 1e-12 of the gradient's scale.
    CHECK((a - b).cwiseAbs().maxCoeff() <= 1e-12 * std::max(1e-3, b.cwiseAbs().maxCoeff()));
  }
  // Adam's first step (bias-corrected m = g, v = g^2) moves an entry by -lr g / (|g| + eps): about lr.
  const auto before = ref.parameter_tensors();
  const auto after = m.parameter_tensors();
  const double dW = after[0].data[0] - before[0].data[0], g0 = got[0].data[0];
  REQUIRE(g0 != 0.0);
  CHECK(std::abs(dW + 1e-3 * g0 / (std::abs(g0) + 1e-8)) <= 1e-3 * 1e-12);
  CHECK(trainer.adam().steps() == 1);
}

TEST_CASE("Adam follows torch.optim.Adam on a scalar; cosine annealing to 0") {
  Vec<double> p = Vec<double>::Constant(1, 1.0), g(1);
  std::vector<TensorRef<double>> ps = {{"p", p.data(), 1, 1, true}}, gs = {{"g", g.data(), 1, 1, true}};
  Adam<double> adam(ps);
  // Hand computation of two steps with gradients 0.5 then -0.25, lr 0.1.
  double m = 0, v = 0, want = 1.0;
  for (int t = 1; t <= 2; ++t) {
    const double grad = t == 1 ? 0.5 : -0.25;
    g(0) = grad;
    adam.step(ps, gs, 0.1);
    m = 0.9 * m + 0.1 * grad;
    v = 0.999 * v + 0.001 * grad * grad;
    want -= (0.1 / (1 - std::pow(0.9, t))) * m / (std::sqrt(v) / std::sqrt(1 - std::pow(0.999, t)) + 1e-8);
    CHECK(p(0) == doctest::Approx(want).epsilon(1e-15));
  }
  CHECK(cosine_lr(5e-4, 0, 100) == 5e-4);
  CHECK(cosine_lr(5e-4, 50, 100) == doctest::Approx(2.5e-4).epsilon(1e-15));
  CHECK(cosine_lr(5e-4, 99, 100) == doctest::Approx(5e-4 * (1 + std::cos(M_PI * 0.99)) / 2).epsilon(1e-15));
  CHECK_THROWS_AS(cosine_lr(5e-4, 100, 100), std::invalid_argument);
}

TEST_CASE("Training is bit-identical for 1 and 2 threads (fixed chunks, fixed reduction order)") {
  Rng rng(kModelTestSeed + 12);
  INFO("seed " << kModelTestSeed + 12);
  const Images im = random_images(80, 8, rng);
  auto train = [&](int threads) {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    ViT<float> m(tiny_config(5), test_factory<float>());
    Trainer<float> trainer(m);
    Rng order(77);
    const auto idx = shuffled_indices(80, order);
    std::vector<double> losses;
    for (int s = 0; s < 2; ++s)
      losses.push_back(trainer.step(im.set(8), std::span(idx).subspan(static_cast<std::size_t>(s) * 40, 40), 1e-3));
    const Evaluation e = evaluate(m, im.set(8));
    losses.push_back(e.loss);
    omp_set_num_threads(saved);
    return std::make_pair(flat_weights(m), losses);
  };
  const auto one = train(1), two = train(2);
  CHECK(one.first == two.first);    // every weight, bit for bit
  CHECK(one.second == two.second);  // the step losses and the evaluation loss
  CHECK(one.second[0] != one.second[1]);
}

TEST_CASE("shuffled_indices: a permutation, the same for the same seed") {
  Rng a(9), b(9);
  const auto x = shuffled_indices(1000, a), y = shuffled_indices(1000, b);
  CHECK(x == y);
  CHECK(std::set<std::int64_t>(x.begin(), x.end()).size() == 1000);
  CHECK(*std::max_element(x.begin(), x.end()) == 999);
  CHECK(x != shuffled_indices(1000, a));
}

TEST_CASE("Checkpoints: a loaded checkpoint gives bit-identical logits; a mismatch is one clear error") {
  Rng rng(kModelTestSeed + 13);
  ScratchDir dir;
  const Images im = random_images(20, 8, rng);
  std::vector<std::int64_t> all(20);
  for (int i = 0; i < 20; ++i) all[static_cast<std::size_t>(i)] = i;
  ViT<float> m(tiny_config(7), test_factory<float>());
  Trainer<float> trainer(m);
  trainer.step(im.set(8), all, 1e-2);  // moves every weight, the method's temperature too
  const auto ckpt = dir.path() / "ckpt";
  save_checkpoint(m, ckpt, 1);
  CHECK(std::filesystem::exists(ckpt / "manifest.json"));
  CHECK(std::filesystem::exists(ckpt / "block1.attn.method.t.npy"));
  ViT<float> loaded(tiny_config(8), test_factory<float>());
  CHECK(predict_logits(loaded, im.set(8), all) != predict_logits(m, im.set(8), all));
  load_checkpoint(loaded, ckpt);
  CHECK(predict_logits(loaded, im.set(8), all) == predict_logits(m, im.set(8), all));
  const CheckpointInfo info = read_checkpoint_info(ckpt);
  CHECK(info.step == 1);
  CHECK(info.config.D == 8);
  CHECK(info.config.tokens() == 16);
  // A .npy file as numpy writes it: shape (8, 12) for mlp.W1, C order.
  const NpyArray w1 = read_npy(ckpt / "block0.mlp.W1.npy");
  CHECK(w1.shape == std::vector<std::size_t>{8, 12});
  CHECK(static_cast<float>(w1.values[1]) == m.params().blocks[0].mlp.W1(0, 1));
  // Mismatches.
  ViTConfig wide = tiny_config(7);
  wide.D = 10;
  ViT<float> other(wide, test_factory<float>());
  CHECK_THROWS_WITH_AS(load_checkpoint(other, ckpt), doctest::Contains("D = 8 does not match the model's 10"), CheckpointError);
  ViTConfig renamed = tiny_config(7);
  renamed.attention.method = "exact";
  ViT<float> other_method(renamed, test_factory<float>());
  CHECK_THROWS_WITH_AS(load_checkpoint(other_method, ckpt), doctest::Contains("does not match the model's \"exact\""),
                       CheckpointError);
  std::filesystem::remove(ckpt / "head.W.npy");
  ViT<float> fresh(tiny_config(8), test_factory<float>());
  const auto before = flat_weights(fresh);
  CHECK_THROWS_WITH_AS(load_checkpoint(fresh, ckpt), doctest::Contains("head.W.npy"), CheckpointError);
  CHECK(flat_weights(fresh) == before);  // unchanged on error
  { std::ofstream(ckpt / "manifest.json") << "{\"format\": \"attnlab-vit-checkpoint\", \"version\": 1, "; }
  CHECK_THROWS_WITH_AS(load_checkpoint(fresh, ckpt), doctest::Contains("manifest.json: malformed JSON"), CheckpointError);
  CHECK_THROWS_WITH_AS(read_checkpoint_info(dir.path() / "none"), doctest::Contains("cannot read"), CheckpointError);
}

TEST_CASE("fit: a tiny ViT learns a task a linear map solves (bright vs dark images), test accuracy recorded per epoch") {
  Rng rng(kModelTestSeed + 14);
  INFO("seed " << kModelTestSeed + 14);
  // Label 1 when the image's brightness level is above the middle; pixels = level + noise.
  auto make = [&](std::int64_t count) {
    Images im;
    for (std::int64_t i = 0; i < count; ++i) {
      const int level = static_cast<int>(rng.uniform() * 200) + 28;
      for (int p = 0; p < 64; ++p)
        im.pixels.push_back(static_cast<std::uint8_t>(std::clamp(level + static_cast<int>(rng.normal() * 20), 0, 255)));
      im.labels.push_back(level > 128 ? 1 : 0);
    }
    return im;
  };
  const Images train = make(256), test = make(128);
  ViT<float> m(tiny_config(11), test_factory<float>());
  Trainer<float> trainer(m);
  FitOptions o;
  o.epochs = 4;
  o.batch = 32;
  o.lr = 1e-2;
  o.shuffle_seed = 3;
  std::vector<StepRecord> steps;
  std::vector<EpochRecord> epochs;
  fit<float>(trainer, train.set(8), test.set(8), o, [&](const StepRecord& s) { steps.push_back(s); },
             [&](const EpochRecord& e) { epochs.push_back(e); });
  REQUIRE(steps.size() == 4 * 8);
  REQUIRE(epochs.size() == 4);
  CHECK(steps.front().lr == doctest::Approx(1e-2));
  CHECK(steps.back().lr < 1e-4);
  CHECK(epochs.back().test.count == 128);
  CHECK(epochs.back().test.accuracy() >= 0.9);
  CHECK(epochs.back().test.loss < epochs.front().test.loss);
  o.train_images = 31;  // not one full batch
  CHECK_THROWS_AS(fit<float>(trainer, train.set(8), test.set(8), o, [](const StepRecord&) {}, [](const EpochRecord&) {}),
                  std::invalid_argument);
}

TEST_CASE("exp_vit_training: a missing data directory, an unknown method, zero epochs, a bad shape: one line, exit status 2") {
  ScratchDir out;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--data", (out.path() / "no-such-dir").string()}, {"--method", "softmax"}, {"--epochs", "0"},
        {"--width", "30", "--heads", "4"}, {"--heads", "0"}, {"--batch", "0"}, {"--layers", "-1"}, {"--mlp", "1e3"}}) {
    std::vector<std::string> all = {"--quick", "--out", out.path().string()};
    all.insert(all.end(), args.begin(), args.end());
    const RunResult r = run_binary("exp_vit_training", all);
    INFO(r.output);
    CHECK(r.exit_status == 2);
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
    CHECK(r.output.find(args[1]) != std::string::npos);  // names the bad value
  }
  CHECK(run_binary("exp_vit_training", {"--quick", "--data", (out.path() / "x").string(), "--out", out.path().string()})
            .output.find("dataset-fashion-mnist") != std::string::npos);  // names the Debian package
  CHECK(!std::filesystem::exists(out.path() / "claims.csv"));
}
