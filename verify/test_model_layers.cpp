// Every layer's backward pass against central finite differences in double (issue 14).
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "attnlab/core/rng.hpp"
#include "attnlab/model/classifier_head.hpp"
#include "attnlab/model/gelu.hpp"
#include "attnlab/model/layernorm.hpp"
#include "attnlab/model/linear.hpp"
#include "attnlab/model/mha.hpp"
#include "attnlab/model/mlp.hpp"
#include "attnlab/model/patch_embedding.hpp"
#include "model_test_support.hpp"
#include "support.hpp"

using namespace attnlab;
using namespace attnlab::testing;

namespace {

using M = Mat<double>;
using V = Vec<double>;

}  // namespace

TEST_CASE("linear backward matches central differences") {
  Rng rng(kModelTestSeed);
  INFO("seed " << kModelTestSeed);
  for (Eigen::Index N : model_test_sizes(rng))
    for (Eigen::Index in : model_test_sizes(rng))
      for (Eigen::Index out : {Eigen::Index(1), Eigen::Index(3), Eigen::Index(7)}) {
        INFO("N " << N << " in " << in << " out " << out);
        M x = gaussian_matrix(N, in, rng), W = gaussian_matrix(in, out, rng), r = gaussian_matrix(N, out, rng);
        V b = gaussian_matrix(out, 1, rng);
        auto loss = [&] { M y; linear_forward(x, W, b, y); return dot_loss(r, y); };
        M dx, dW = M::Zero(in, out);
        V db = V::Zero(out);
        linear_backward(x, W, r, &dx, dW, db);
        ATTNLAB_CHECK_RATIO_LT(fd_ratio(x, dx, loss), kFdTolerance, "dL/dx");
        ATTNLAB_CHECK_RATIO_LT(fd_ratio(W, dW, loss), kFdTolerance, "dL/dW");
        ATTNLAB_CHECK_RATIO_LT(fd_ratio(b, db, loss), kFdTolerance, "dL/db");
      }
}

TEST_CASE("layernorm backward matches central differences") {
  Rng rng(kModelTestSeed + 1);
  INFO("seed " << kModelTestSeed + 1);
  for (Eigen::Index N : model_test_sizes(rng))
    for (Eigen::Index D : model_test_sizes(rng)) {
      INFO("N " << N << " D " << D);
      M x = gaussian_matrix(N, D, rng), r = gaussian_matrix(N, D, rng);
      V gamma = V::Ones(D) + gaussian_matrix(D, 1, rng, 0.3), beta = gaussian_matrix(D, 1, rng);
      auto loss = [&] { M y; LayerNormTape<double> t; layernorm_forward(x, gamma, beta, y, t); return dot_loss(r, y); };
      M y, dx;
      LayerNormTape<double> tape;
      layernorm_forward(x, gamma, beta, y, tape);
      V dgamma = V::Zero(D), dbeta = V::Zero(D);
      layernorm_backward(r, tape, gamma, dx, dgamma, dbeta);
      ATTNLAB_CHECK_RATIO_LT(fd_ratio(x, dx, loss), kFdTolerance, "dL/dx");
      ATTNLAB_CHECK_RATIO_LT(fd_ratio(gamma, dgamma, loss), kFdTolerance, "dL/dgamma");
      ATTNLAB_CHECK_RATIO_LT(fd_ratio(beta, dbeta, loss), kFdTolerance, "dL/dbeta");
    }
}

TEST_CASE("the finite-difference check fails on a backward that is wrong by one part in a thousand") {
  // The same layernorm check with one gradient entry scaled by 1.001 (and one with the xhat term of
  // the backward dropped): the ratio must exceed the tolerance, or the check above proves nothing.
  Rng rng(kModelTestSeed + 2);
  INFO("seed " << kModelTestSeed + 2);
  const Eigen::Index N = 3, D = 5;
  M x = gaussian_matrix(N, D, rng), r = gaussian_matrix(N, D, rng);
  V gamma = V::Ones(D), beta = V::Zero(D);
  auto loss = [&] { M y; LayerNormTape<double> t; layernorm_forward(x, gamma, beta, y, t); return dot_loss(r, y); };
  M y, dx;
  LayerNormTape<double> tape;
  layernorm_forward(x, gamma, beta, y, tape);
  V dgamma = V::Zero(D), dbeta = V::Zero(D);
  layernorm_backward(r, tape, gamma, dx, dgamma, dbeta);
  ATTNLAB_REQUIRE_RATIO_LT(fd_ratio(x, dx, loss), kFdTolerance, "dL/dx");
  M wrong = dx;
  Eigen::Index i = 0, j = 0;
  dx.cwiseAbs().maxCoeff(&i, &j);
  wrong(i, j) *= 1.001;
  ATTNLAB_CHECK_RATIO_GT(fd_ratio(x, wrong, loss), kFdTolerance, "dL/dx with its largest entry off by 0.1%");
  // The backward without the term through the row's standard deviation.
  const V mean_g = r.rowwise().sum() / static_cast<double>(D);
  const M no_std_term = (r.colwise() - mean_g).array().colwise() * tape.rstd.array();
  ATTNLAB_CHECK_RATIO_GT(fd_ratio(x, no_std_term, loss), kFdTolerance, "dL/dx without the standard deviation's term");
}

TEST_CASE("GELU backward matches central differences, and GELU is the erf form") {
  Rng rng(kModelTestSeed + 3);
  INFO("seed " << kModelTestSeed + 3);
  for (Eigen::Index N : model_test_sizes(rng)) {
    M x = gaussian_matrix(N, 5, rng, 2.0), r = gaussian_matrix(N, 5, rng);
    auto loss = [&] { M y; gelu_forward(x, y); return dot_loss(r, y); };
    M y, dx;
    gelu_forward(x, y);
    gelu_backward(x, r, dx);
    ATTNLAB_CHECK_RATIO_LT(fd_ratio(x, dx, loss), kFdTolerance, "dL/dx");
    for (Eigen::Index k = 0; k < x.size(); ++k)
      CHECK(std::abs(y(k) - 0.5 * x(k) * (1 + std::erf(x(k) / std::sqrt(2.0)))) <= 4e-16 * (1 + std::abs(x(k))));
  }
  // float: the vectorised erf against std::erf in double, within a few float ulps of the value's scale.
  Mat<float> xf = gaussian_matrix<float>(64, 3, rng, 3.0), yf;
  gelu_forward(xf, yf);
  for (Eigen::Index k = 0; k < xf.size(); ++k) {
    const double want = 0.5 * xf(k) * (1 + std::erf(static_cast<double>(xf(k)) / std::sqrt(2.0)));
    CHECK(std::abs(yf(k) - want) <= 8 * 1.2e-7 * (1 + std::abs(xf(k))));
  }
}

TEST_CASE("patch embedding: patch order, overlapping padded windows, and its backward matches central differences") {
  Rng rng(kModelTestSeed + 4);
  INFO("seed " << kModelTestSeed + 4);
  // Two 4x4 images with distinct pixels; 2x2 patches: token t = grid row * 2 + grid col.
  std::vector<std::uint8_t> pixels(32);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<std::uint8_t>(7 * i);
  const std::vector<std::int64_t> pick = {1, 0};
  M p;
  patchify<double>(pixels, pick, 4, 2, 2, 0, p);
  REQUIRE(p.rows() == 8);
  REQUIRE(p.cols() == 4);
  auto norm = [](int v) { return (v / 255.0 - kPixelMean) / kPixelStd; };
  // Image 1 (listed first), token 3 (bottom-right patch), value 2 (its bottom-left pixel): row 3, col 2.
  CHECK(p(3, 2) == doctest::Approx(norm(7 * (16 + 3 * 4 + 2))).epsilon(1e-15));
  // Image 0, token 1 (top-right), value 1 (top-right pixel): row 4 + 1, col 3.
  CHECK(p(5, 1) == doctest::Approx(norm(7 * (0 * 4 + 3))).epsilon(1e-15));
  // 4x4 windows every 2 pixels of the image padded by 1: a 2x2 grid, windows overlapping by 2 pixels.
  M w;
  patchify<double>(pixels, pick, 4, 4, 2, 1, w);
  REQUIRE(w.rows() == 8);
  REQUIRE(w.cols() == 16);
  // Image 1, token 0 (top-left window): its corner (0, 0) is padding, (1, 1) is pixel (0, 0).
  CHECK(w(0, 0) == doctest::Approx(norm(0)).epsilon(1e-15));
  CHECK(w(0, 1 * 4 + 1) == doctest::Approx(norm(7 * (16 + 0))).epsilon(1e-15));
  // Token 3 (bottom-right window) starts at pixel (1, 1); its value (2, 1) is pixel (3, 2); (3, 3) is padding.
  CHECK(w(3, 0) == doctest::Approx(norm(7 * (16 + 1 * 4 + 1))).epsilon(1e-15));
  CHECK(w(3, 2 * 4 + 1) == doctest::Approx(norm(7 * (16 + 3 * 4 + 2))).epsilon(1e-15));
  CHECK(w(3, 15) == doctest::Approx(norm(0)).epsilon(1e-15));
  // Image 0, token 1 (top-right window, columns 1..4): its value (1, 2) is pixel (0, 3); (1, 3) is padding.
  CHECK(w(4 + 1, 1 * 4 + 2) == doctest::Approx(norm(7 * 3)).epsilon(1e-15));
  CHECK(w(4 + 1, 1 * 4 + 3) == doctest::Approx(norm(0)).epsilon(1e-15));
  // Windows that do not tile the padded image are refused, naming the sizes.
  CHECK_THROWS_WITH_AS(patchify<double>(pixels, pick, 4, 3, 2, 0, w), doctest::Contains("do not tile a 4x4 image"),
                       std::invalid_argument);
  CHECK_THROWS_AS(patchify<double>(pixels, pick, 4, 2, 2, 2, w), std::invalid_argument);  // pad >= patch
  CHECK_THROWS_AS(patchify<double>(pixels, pick, 4, 2, 0, 0, w), std::invalid_argument);  // stride 0
  for (Eigen::Index B : {Eigen::Index(1), Eigen::Index(2), Eigen::Index(3)})
    for (Eigen::Index n : {Eigen::Index(1), Eigen::Index(4)}) {
      const Eigen::Index D = 3;
      M pp = gaussian_matrix(B * n, 4, rng), W = gaussian_matrix(4, D, rng), pos = gaussian_matrix(n, D, rng);
      V b = gaussian_matrix(D, 1, rng);
      M r = gaussian_matrix(B * n, D, rng);
      auto loss = [&] { M e; patch_embedding_forward(pp, W, b, pos, e); return dot_loss(r, e); };
      M dW = M::Zero(4, D), dpos = M::Zero(n, D);
      V db = V::Zero(D);
      patch_embedding_backward(pp, r, dW, db, dpos);
      ATTNLAB_CHECK_RATIO_LT(fd_ratio(W, dW, loss), kFdTolerance, "dL/dW");
      ATTNLAB_CHECK_RATIO_LT(fd_ratio(b, db, loss), kFdTolerance, "dL/db");
      ATTNLAB_CHECK_RATIO_LT(fd_ratio(pos, dpos, loss), kFdTolerance, "dL/dpos");
    }
}

TEST_CASE("MLP backward matches central differences") {
  Rng rng(kModelTestSeed + 5);
  INFO("seed " << kModelTestSeed + 5);
  for (Eigen::Index N : model_test_sizes(rng))
    for (Eigen::Index D : {Eigen::Index(1), Eigen::Index(2), Eigen::Index(5)}) {
      const Eigen::Index Mw = 2 * D + 1;
      INFO("N " << N << " D " << D);
      MlpParams<double> p{gaussian_matrix(D, Mw, rng), gaussian_matrix(Mw, 1, rng), gaussian_matrix(Mw, D, rng),
                          gaussian_matrix(D, 1, rng)};
      M z = gaussian_matrix(N, D, rng), r = gaussian_matrix(N, D, rng);
      auto loss = [&] { M y; MlpTape<double> t; mlp_forward(z, p, y, t); return dot_loss(r, y); };
      M y, dz;
      MlpTape<double> tape;
      mlp_forward(z, p, y, tape);
      MlpParams<double> g{M::Zero(D, Mw), V::Zero(Mw), M::Zero(Mw, D), V::Zero(D)};
      mlp_backward(z, p, tape, r, dz, g);
      ATTNLAB_CHECK_RATIO_LT(fd_ratio(z, dz, loss), kFdTolerance, "dL/dz");
      ATTNLAB_CHECK_RATIO_LT(fd_ratio(p.W1, g.W1, loss), kFdTolerance, "dL/dW1");
      ATTNLAB_CHECK_RATIO_LT(fd_ratio(p.b1, g.b1, loss), kFdTolerance, "dL/db1");
      ATTNLAB_CHECK_RATIO_LT(fd_ratio(p.W2, g.W2, loss), kFdTolerance, "dL/dW2");
      ATTNLAB_CHECK_RATIO_LT(fd_ratio(p.b2, g.b2, loss), kFdTolerance, "dL/db2");
    }
}

TEST_CASE("multi-head attention backward matches central differences (test-only attention with a parameter)") {
  Rng rng(kModelTestSeed + 6);
  INFO("seed " << kModelTestSeed + 6);
  TemperatureSoftmaxAttention<double> method;
  for (Eigen::Index n : model_test_sizes(rng))
    for (Eigen::Index heads : {Eigen::Index(1), Eigen::Index(2)})
      for (Eigen::Index B : {Eigen::Index(1), Eigen::Index(2)}) {
        const Eigen::Index D = 3 * heads;
        INFO("n " << n << " heads " << heads << " images " << B);
        auto w = [&] { return M(gaussian_matrix(D, D, rng, 0.6)); };
        auto bias = [&] { return V(gaussian_matrix(D, 1, rng, 0.3)); };
        MhaParams<double> p{w(), w(), w(), w(), bias(), bias(), bias(), bias()};
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
        MhaParams<double> g{M::Zero(D, D), M::Zero(D, D), M::Zero(D, D), M::Zero(D, D),
                            V::Zero(D), V::Zero(D), V::Zero(D), V::Zero(D)};
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
}

TEST_CASE("classifier head and cross-entropy backward match central differences") {
  Rng rng(kModelTestSeed + 7);
  INFO("seed " << kModelTestSeed + 7);
  for (Eigen::Index B : {Eigen::Index(1), Eigen::Index(2), Eigen::Index(3), Eigen::Index(6)})
    for (Eigen::Index n : {Eigen::Index(1), Eigen::Index(3)}) {
      const Eigen::Index D = 4, C = 10;
      INFO("B " << B << " n " << n);
      std::vector<std::uint8_t> labels(static_cast<std::size_t>(B));
      for (auto& l : labels) l = static_cast<std::uint8_t>(rng.uniform() * C);
      M x = gaussian_matrix(B * n, D, rng), W = gaussian_matrix(D, C, rng);
      V b = gaussian_matrix(C, 1, rng);
      const double scale = 1.0 / (2.0 * static_cast<double>(B));  // as a chunk of a batch twice as large
      auto loss = [&] {
        M pooled, logits;
        classifier_forward(x, n, W, b, pooled, logits);
        return cross_entropy<double>(logits, labels, scale, nullptr);
      };
      M pooled, logits, dlogits, dx, dW = M::Zero(D, C);
      V db = V::Zero(C);
      classifier_forward(x, n, W, b, pooled, logits);
      cross_entropy<double>(logits, labels, scale, &dlogits);
      classifier_backward(pooled, n, W, dlogits, dx, dW, db);
      ATTNLAB_CHECK_RATIO_LT(fd_ratio(x, dx, loss), kFdTolerance, "dL/dx");
      ATTNLAB_CHECK_RATIO_LT(fd_ratio(W, dW, loss), kFdTolerance, "dL/dW");
      ATTNLAB_CHECK_RATIO_LT(fd_ratio(b, db, loss), kFdTolerance, "dL/db");
    }
  // The loss of uniform logits is log C, whatever the labels.
  const M zeros = M::Zero(2, 10);
  const std::vector<std::uint8_t> two = {3, 9};
  CHECK(cross_entropy<double>(zeros, two, 0.5, nullptr) == doctest::Approx(std::log(10.0)).epsilon(1e-15));
}
