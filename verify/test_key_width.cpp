// A query/key width per head other than D / H (ViTConfig::key_width): the layer's and the whole model's
// backward against central differences in double, the default unchanged, checkpoints that record the
// width (and the committed version-2 checkpoints still loading), Adam's per-tensor restart, the FLOP count.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "attnlab/model/adam.hpp"
#include "attnlab/model/checkpoint.hpp"
#include "attnlab/model/flops.hpp"
#include "attnlab/model/mha.hpp"
#include "attnlab/model/patch_embedding.hpp"
#include "attnlab/model/trainer.hpp"
#include "attnlab/model/vit.hpp"
#include "model_test_support.hpp"
#include "support.hpp"

using namespace attnlab;
using namespace attnlab::testing;

namespace {

using M = Mat<double>;
using V = Vec<double>;

ViTConfig tiny(std::uint64_t seed, Eigen::Index key_width, const std::string& method) {
  ViTConfig c;
  c.image = 8;
  c.D = 8;
  c.heads = 2;
  c.layers = 2;
  c.mlp = 12;
  c.seed = seed;
  c.key_width = key_width;
  c.attention.method = method;
  return c;
}

}  // namespace

TEST_CASE("multi-head attention with a query/key width other than D / H: backward matches central differences") {
  Rng rng(kModelTestSeed + 40);
  INFO("seed " << kModelTestSeed + 40);
  TemperatureSoftmaxAttention<double> method;
  const Eigen::Index D = 8, heads = 2, n = 5, B = 2;
  for (Eigen::Index dk : {Eigen::Index(2), Eigen::Index(1), Eigen::Index(7)}) {  // below, far below, above D / H = 4
    INFO("d_k " << dk);
    auto w = [&](Eigen::Index cols) { return M(gaussian_matrix(D, cols, rng, 0.6)); };
    auto bias = [&](Eigen::Index size) { return V(gaussian_matrix(size, 1, rng, 0.3)); };
    MhaParams<double> p{w(heads * dk), w(heads * dk), w(D), w(D), bias(heads * dk), bias(heads * dk), bias(D), bias(D)};
    method.parameters()[0]->setConstant(0.8);
    M z = gaussian_matrix(B * n, D, rng), r = gaussian_matrix(B * n, D, rng);
    auto loss = [&] {
      M y;
      MhaTape<double> t;
      mha_forward(z, p, method, n, heads, y, t, false);
      return dot_loss(r, y);
    };
    M y, dz;
    MhaTape<double> tape;
    mha_forward(z, p, method, n, heads, y, tape, true);
    CHECK(y.rows() == B * n);
    CHECK(y.cols() == D);
    MhaParams<double> g{M::Zero(D, heads * dk), M::Zero(D, heads * dk), M::Zero(D, D), M::Zero(D, D),
                        V::Zero(heads * dk),    V::Zero(heads * dk),    V::Zero(D),    V::Zero(D)};
    std::vector<M> mg = {M::Zero(1, 1)};
    mha_backward(z, p, method, n, heads, tape, r, dz, g, &mg);
    ATTNLAB_CHECK_RATIO_LT(fd_ratio(z, dz, loss), kFdTolerance, "dL/dz");
    ATTNLAB_CHECK_RATIO_LT(fd_ratio(p.Wq, g.Wq, loss), kFdTolerance, "dL/dWq");
    ATTNLAB_CHECK_RATIO_LT(fd_ratio(p.Wk, g.Wk, loss), kFdTolerance, "dL/dWk");
    ATTNLAB_CHECK_RATIO_LT(fd_ratio(p.Wv, g.Wv, loss), kFdTolerance, "dL/dWv");
    ATTNLAB_CHECK_RATIO_LT(fd_ratio(p.Wo, g.Wo, loss), kFdTolerance, "dL/dWo");
    ATTNLAB_CHECK_RATIO_LT(fd_ratio(p.bq, g.bq, loss), kFdTolerance, "dL/dbq");
    ATTNLAB_CHECK_RATIO_LT(fd_ratio(p.bk, g.bk, loss), kFdTolerance, "dL/dbk");
    ATTNLAB_CHECK_RATIO_LT(fd_ratio(p.bv, g.bv, loss), kFdTolerance, "dL/dbv");
    ATTNLAB_CHECK_RATIO_LT(fd_ratio(p.bo, g.bo, loss), kFdTolerance, "dL/dbo");
    ATTNLAB_CHECK_RATIO_LT(fd_ratio(*method.parameters()[0], mg[0], loss), kFdTolerance, "dL/d(the method's parameter)");
  }
  // Query and key widths that do not split into the heads, or differ, are refused.
  MhaParams<double> bad{M::Zero(D, 3), M::Zero(D, 3), M::Zero(D, D), M::Zero(D, D), V::Zero(3), V::Zero(3), V::Zero(D), V::Zero(D)};
  M y;
  MhaTape<double> t;
  CHECK_THROWS_WITH_AS(mha_forward(M(M::Zero(n, D)), bad, method, n, heads, y, t, false),
                       doctest::Contains("query/key columns 3, 3"), std::invalid_argument);
}

TEST_CASE("ViT with key_width 2 (D 8, H 2), exact attention: one model step against central differences") {
  Rng rng(kModelTestSeed + 41);
  INFO("seed " << kModelTestSeed + 41);
  ViT<double> m(tiny(kModelTestSeed + 41, 2, "exact"));
  CHECK(m.params().blocks[0].attn.Wq.rows() == 8);
  CHECK(m.params().blocks[0].attn.Wq.cols() == 4);
  CHECK(m.params().blocks[1].attn.bk.size() == 4);
  CHECK(m.params().blocks[1].attn.Wv.cols() == 8);
  CHECK(m.attention(0).describe().find("d_k = 2, d_v = 4") != std::string::npos);
  for (auto& t : m.parameter_tensors())
    if (!t.is_vector) Eigen::Map<M>(t.data, t.rows, t.cols) = gaussian_matrix(t.rows, t.cols, rng, 0.5);
  for (auto& b : m.params().blocks) {
    b.ln1_gamma = V::Ones(8) + gaussian_matrix(8, 1, rng, 0.2);
    b.attn.bq = gaussian_matrix(4, 1, rng, 0.3);
  }
  std::vector<std::uint8_t> pixels(3 * 64), labels = {1, 7, 3};
  for (auto& p : pixels) p = static_cast<std::uint8_t>(rng.next_u64() % 256);
  const std::vector<std::int64_t> all = {0, 1, 2};
  ViTActivations<double> act;
  patchify<double>(pixels, all, 8, 4, 2, 1, act.patches);
  auto loss = [&] { ViTActivations<double> a; a.patches = act.patches; return m.forward_backward(a, labels, 1.0 / 3, nullptr); };
  ViTGrads<double> g = m.zero_grads();
  m.forward_backward(act, labels, 1.0 / 3, &g);
  auto params = m.parameter_tensors();
  const auto grads = m.gradient_tensors(g);
  REQUIRE(params.size() == grads.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    INFO(params[i].name);
    CHECK(params[i].size() == grads[i].size());
    const auto sample = sample_entries(params[i].size(), 8, rng);
    ATTNLAB_CHECK_RATIO_LT(fd_ratio(params[i].data, grads[i].data, params[i].size(), loss, sample), kFdTolerance, "dL/d" + params[i].name);
  }
  ViTConfig negative = tiny(1, -1, "exact");
  CHECK_THROWS_WITH_AS(ViT<double>{negative}, doctest::Contains("key_width (= -1)"),
                       std::invalid_argument);
}

TEST_CASE("key_width: 0 and D / H build the same model; FLOPs count the query/key width") {
  ViT<float> by_default(ViTConfig{});
  ViTConfig explicit_width;
  explicit_width.key_width = 16;
  ViT<float> stated(explicit_width);
  auto a = by_default.parameter_tensors(), b = stated.parameter_tensors();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].name);
    REQUIRE(a[i].size() == b[i].size());
    CHECK(std::equal(a[i].data, a[i].data + a[i].size(), b[i].data));
  }
  // The default's count is the hand-checked one (test_model_flops.cpp); a key width of 2 removes
  // 2 x (2 n D (D - H d_k)) projection FLOPs and 2 n^2 (D - H d_k) score FLOPs per layer.
  ViTConfig narrow;
  narrow.key_width = 2;
  const double n = 196, D = 64, Dk = 8;
  CHECK(vit_forward_flops(ViTConfig{}).total() - vit_forward_flops(narrow).total() ==
        doctest::Approx(2 * (2 * (2 * n * D * (D - Dk)) + 2 * n * n * (D - Dk))).epsilon(1e-15));
}

TEST_CASE("Checkpoints record key_width; the committed version-2 checkpoints still load") {
  Rng rng(kModelTestSeed + 42);
  ScratchDir dir;
  ViT<float> m(tiny(5, 2, "exact"));
  for (auto& t : m.parameter_tensors())
    Eigen::Map<Mat<float>>(t.data, t.rows, t.cols) = gaussian_matrix<float>(t.rows, t.cols, rng, 0.3);
  save_checkpoint(m, dir.path() / "narrow", 3);
  const CheckpointInfo info = read_checkpoint_info(dir.path() / "narrow");
  CHECK(info.config.key_width == 2);
  ViT<float> loaded(tiny(6, 2, "exact"));
  load_checkpoint(loaded, dir.path() / "narrow");
  auto x = m.parameter_tensors(), y = loaded.parameter_tensors();
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(std::equal(x[i].data, x[i].data + x[i].size(), y[i].data));
  ViT<float> wide(tiny(6, 3, "exact"));
  CHECK_THROWS_WITH_AS(load_checkpoint(wide, dir.path() / "narrow"), doctest::Contains("key_width = 2 does not match the model's 3"),
                       CheckpointError);
  // A default model writes no key_width: its manifest is the bytes it was before key_width existed.
  ViT<float> plain(tiny(5, 0, "exact"));
  save_checkpoint(plain, dir.path() / "plain", 0);
  CHECK(read_text(dir.path() / "plain" / "manifest.json").find("key_width") == std::string::npos);
  CHECK(read_text(dir.path() / "narrow" / "manifest.json").find("\"key_width\": 2,") != std::string::npos);
  // The committed full-run checkpoints (version 2, no key_width): read as the default width, and they load. The
  // first seed's, in exp_vit_training's layout checkpoints/<method>/seed-<k>/.
  const std::filesystem::path committed =
      std::filesystem::path(ATTNLAB_SOURCE_DIR) / "results" / "checkpoints" / "exact" / "seed-0";
  INFO("committed checkpoint: " << committed);
  REQUIRE(std::filesystem::exists(committed / "manifest.json"));
  const CheckpointInfo c = read_checkpoint_info(committed);
  CHECK(c.config.key_width == 0);
  ViT<float> trained(c.config);
  load_checkpoint(trained, committed);
  CHECK(trained.params().blocks[0].attn.Wq.cols() == 64);
  CHECK(trained.params().blocks[0].attn.Wq.norm() > 0.1f);
}

TEST_CASE("Adam::reset: the tensor restarts as a fresh one (zero moments, its own step count), the others go on") {
  Vec<double> a = Vec<double>::Constant(3, 1.0), b = Vec<double>::Constant(2, -1.0);
  Vec<double> ga = Vec<double>::Constant(3, 0.5), gb = Vec<double>::Constant(2, 2.0);
  auto refs = [](Vec<double>& u, Vec<double>& v) {
    return std::vector<TensorRef<double>>{{"a", u.data(), u.size(), 1, true}, {"b", v.data(), v.size(), 1, true}};
  };
  Adam<double> adam(refs(a, b));
  for (int i = 0; i < 5; ++i) adam.step(refs(a, b), refs(ga, gb), 1e-2);
  Adam<double> untouched = adam;
  Vec<double> a2 = a, b2 = b;
  // Tensor b grows to 4 entries: a fresh tensor's first Adam step moves each entry by lr (m / sqrt(v) = sign).
  adam.reset(1, 4);
  Vec<double> grown = Vec<double>::Zero(4), g4(4);
  g4 << 1.0, -3.0, 0.25, 2.0;
  adam.step(refs(a, grown), refs(ga, g4), 1e-2);
  for (Eigen::Index i = 0; i < 4; ++i) CHECK(grown(i) == doctest::Approx(g4(i) > 0 ? -1e-2 : 1e-2).epsilon(1e-6));
  untouched.step(refs(a2, b2), refs(ga, gb), 1e-2);
  CHECK(a == a2);  // tensor a's update is the one without the reset, bit for bit
  CHECK(adam.steps() == 6);
  CHECK_THROWS_AS(adam.reset(2, 1), std::invalid_argument);
  CHECK_THROWS_WITH_AS(adam.step(refs(a, b), refs(ga, gb), 1e-2), doctest::Contains("changed size"), std::invalid_argument);
}
