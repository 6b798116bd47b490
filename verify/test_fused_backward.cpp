// Checks of the fused (FlashAttention-2 style) backward of exact attention (issue 17) against the
// gradients written from their definition, against finite differences, and across thread counts.
#include <doctest/doctest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "attention_test_support.hpp"
#include "attnlab/attention/fused_attention.hpp"

using namespace attnlab;
using namespace attnlab::testing;

namespace {

// The gradients from their definition, in double with the whole n_q x n_k matrix:
// P = softmax(Q K^T / sqrt(d)), dV = P^T dO, dP = dO V^T, dS = P o (dP - rowsum(P o dP)),
// dQ = dS K / sqrt(d), dK = dS^T Q / sqrt(d).
struct GradientReference {
  Eigen::MatrixXd p, dq, dk, dv;
};

GradientReference reference_gradients(const Eigen::MatrixXd& q, const Eigen::MatrixXd& k, const Eigen::MatrixXd& v,
                                      const Eigen::MatrixXd& d_out) {
  const double scale = 1 / std::sqrt(static_cast<double>(q.cols()));
  GradientReference r;
  r.p = q * k.transpose() * scale;
  for (Eigen::Index i = 0; i < r.p.rows(); ++i) {
    r.p.row(i).array() = (r.p.row(i).array() - r.p.row(i).maxCoeff()).exp();  // max first: no overflow
    r.p.row(i) /= r.p.row(i).sum();
  }
  r.dv = r.p.transpose() * d_out;
  const Eigen::MatrixXd dp = d_out * v.transpose();
  const Eigen::VectorXd rows = r.p.cwiseProduct(dp).rowwise().sum();
  const Eigen::MatrixXd ds = r.p.cwiseProduct(dp.colwise() - rows);
  r.dq = ds * k * scale;
  r.dk = ds.transpose() * q * scale;
  return r;
}

// The scale of each gradient's terms, for the LAPACK-style ratio |ours - reference| / (u * scale):
// u = (d s_max + n_q + n_k + d_v + 4) eps bounds the relative error of a recomputed weight P_ij (its logit's
// rounding, d eps |q||k| / sqrt(d), turned relative by exp) plus the roundings of sums of n_q, n_k or d_v
// terms; A = d_v max|dO| max|V| bounds |dP_ij| and |D_i|; c = max_j sum_i P_ij, the largest column sum.
//   dV_j = sum_i P_ij dO_i:                 scale c max|dO|
//   dQ_i = sum_j P_ij (dP_ij - D_i) K_j / sqrt(d):   scale 2 A max|K| / sqrt(d)   (sum_j P_ij = 1)
//   dK_j = sum_i P_ij (dP_ij - D_i) Q_i / sqrt(d):   scale 2 A max|Q| c / sqrt(d)
struct Scales {
  double u, dq, dk, dv;
};

template <typename T>
Scales gradient_scales(const Mat<T>& q, const Mat<T>& k, const Mat<T>& v, const Mat<T>& d_out, const Eigen::MatrixXd& p) {
  const double d = static_cast<double>(q.cols()), dv = static_cast<double>(v.cols());
  // (squared norms, one square root per maximum: Eigen's vectorised sqrt over a rowwise norm trips GCC 12's
  // -Wuninitialized inside its own AVX-512 header)
  const double s_max = std::sqrt(static_cast<double>(q.rowwise().squaredNorm().maxCoeff()) *
                                 static_cast<double>(k.rowwise().squaredNorm().maxCoeff())) / std::sqrt(d);
  const double u = (d * s_max + static_cast<double>(q.rows() + k.rows()) + dv + 4) * eps<T>();
  const double max_do = std::max(1e-300, static_cast<double>(d_out.cwiseAbs().maxCoeff()));
  const double a = dv * max_do * static_cast<double>(v.cwiseAbs().maxCoeff());
  const double c = p.colwise().sum().maxCoeff();
  return {u, 2 * a * static_cast<double>(k.cwiseAbs().maxCoeff()) / std::sqrt(d) + 1e-300,
          2 * a * static_cast<double>(q.cwiseAbs().maxCoeff()) * c / std::sqrt(d) + 1e-300, c * max_do};
}

constexpr double kRatioThreshold = 30;  // as LAPACK's test drivers

template <typename T>
void check_against_definition() {
  const std::uint64_t seed = kAttentionTestSeed + 21;
  Rng rng(seed);
  INFO("seed " << seed);
  std::vector<Eigen::Index> sizes = attention_test_sizes(rng);
  for (Eigen::Index n : {kBackwardQueryBlock, kBackwardQueryBlock + 1, 2 * kBackwardKeyBlock + 3}) sizes.push_back(n);
  for (const auto& family : attention_families())
    for (Eigen::Index n : sizes) {
      const Eigen::Index d = 1 + static_cast<Eigen::Index>(rng.uniform() * 40);
      const auto in = typed_inputs<T>(family, n, d, rng);
      const Mat<T> d_out = gaussian_matrix<T>(n, d, rng);
      Vec<T> lse;
      const Mat<T> out = fused_attention(in.q, in.k, in.v, 0, lse);
      const AttentionGradients<T> g = fused_attention_backward(in.q, in.k, in.v, out, lse, d_out);
      const GradientReference ref = reference_gradients(in.q.template cast<double>(), in.k.template cast<double>(),
                                                in.v.template cast<double>(), d_out.template cast<double>());
      const Scales s = gradient_scales(in.q, in.k, in.v, d_out, ref.p);
      INFO(family << " n=" << n << " d=" << d << " u=" << s.u);
      REQUIRE(g.dq.allFinite());
      REQUIRE(g.dk.allFinite());
      REQUIRE(g.dv.allFinite());
      ATTNLAB_CHECK_RATIO_LE((g.dq.template cast<double>() - ref.dq).cwiseAbs().maxCoeff() / (s.u * s.dq), kRatioThreshold,
                             "dQ against the definition");
      ATTNLAB_CHECK_RATIO_LE((g.dk.template cast<double>() - ref.dk).cwiseAbs().maxCoeff() / (s.u * s.dk), kRatioThreshold,
                             "dK against the definition");
      ATTNLAB_CHECK_RATIO_LE((g.dv.template cast<double>() - ref.dv).cwiseAbs().maxCoeff() / (s.u * s.dv), kRatioThreshold,
                             "dV against the definition");
    }
}

}  // namespace

TEST_CASE("fused attention with statistics: the same output bit for bit, lse the log of each softmax normaliser") {
  const std::uint64_t seed = kAttentionTestSeed + 20;
  Rng rng(seed);
  INFO("seed " << seed);
  for (Eigen::Index n : {Eigen::Index(1), Eigen::Index(3), Eigen::Index(70), Eigen::Index(300)})
    for (Eigen::Index block : {Eigen::Index(0), Eigen::Index(7)}) {
      const Mat<float> q = gaussian_matrix<float>(n, 8, rng, 3), k = gaussian_matrix<float>(n + 5, 8, rng, 3),
                       v = gaussian_matrix<float>(n + 5, 4, rng);
      Vec<float> lse;
      const Mat<float> out = fused_attention(q, k, v, block, lse);
      CHECK(out == fused_attention(q, k, v, block));
      const Eigen::MatrixXd s = q.cast<double>() * k.cast<double>().transpose() / std::sqrt(8.0);
      const double s_max = std::sqrt(static_cast<double>(q.rowwise().squaredNorm().maxCoeff()) *
                                     static_cast<double>(k.rowwise().squaredNorm().maxCoeff())) / std::sqrt(8.0);
      // lse carries the logits' rounding (8 eps s_max) and that of the sum's log ((n_k + 4) eps).
      const double unit = (8 * s_max + static_cast<double>(k.rows()) + 4) * eps<float>();
      for (Eigen::Index i = 0; i < n; ++i) {
        const double m = s.row(i).maxCoeff();
        const double exact = m + std::log((s.row(i).array() - m).exp().sum());
        INFO("n=" << n << " block=" << block << " query " << i);
        ATTNLAB_CHECK_RATIO_LE(std::abs(static_cast<double>(lse(i)) - exact) / unit, kRatioThreshold, "lse");
      }
    }
}

TEST_CASE("fused attention backward agrees with the gradients' definition in float and double") {
  check_against_definition<double>();
  check_against_definition<float>();
}

TEST_CASE("fused attention backward agrees with central differences (double)") {
  const std::uint64_t seed = kAttentionTestSeed + 22;
  Rng rng(seed);
  INFO("seed " << seed);
  const Eigen::Index n = kBackwardKeyBlock + 9, d = 6;  // two key blocks, five query blocks, the last ones partial
  const Mat<double> q = gaussian_matrix<double>(n, d, rng), k = gaussian_matrix<double>(n, d, rng),
                    v = gaussian_matrix<double>(n, d, rng), d_out = gaussian_matrix<double>(n, d, rng);
  Vec<double> lse;
  const Mat<double> out = fused_attention(q, k, v, 0, lse);
  const AttentionGradients<double> g = fused_attention_backward(q, k, v, out, lse, d_out);
  // L = <dO, attention(Q, K, V)>, whose gradient the backward returns. Central differences along a random
  // direction E: truncation O(h^2) (third derivatives of order 1 here), rounding O(eps |L| / h); h = 1e-4
  // keeps both near 1e-8 relative to |grad| |E|.
  const double h = 1e-4;
  const auto loss = [&](const Mat<double>& qq, const Mat<double>& kk, const Mat<double>& vv) {
    return fused_attention(qq, kk, vv).cwiseProduct(d_out).sum();
  };
  for (int which = 0; which < 3; ++which) {
    const Mat<double> e = gaussian_matrix<double>(n, d, rng);
    const Mat<double>& grad = which == 0 ? g.dq : which == 1 ? g.dk : g.dv;
    const auto moved = [&](double t) {
      Mat<double> x = which == 0 ? q : which == 1 ? k : v;
      x += t * e;
      return which == 0 ? loss(x, k, v) : which == 1 ? loss(q, x, v) : loss(q, k, x);
    };
    const double fd = (moved(h) - moved(-h)) / (2 * h);
    const double analytic = grad.cwiseProduct(e).sum();
    INFO("input " << "QKV"[which] << ": finite difference " << fd << ", backward " << analytic);
    ATTNLAB_CHECK_RATIO_LE(std::abs(fd - analytic) / (grad.norm() * e.norm()), 1e-6, "central difference against <grad, E>");
  }
}

TEST_CASE("fused attention backward on a stack: every head as alone, bit for bit with 1, 2, 3 and 5 threads") {
  const std::uint64_t seed = kAttentionTestSeed + 23;
  Rng rng(seed);
  INFO("seed " << seed);
  // 3 key blocks per head (the last one partial), 4 heads: 12 key-block tasks adding into dQ in turn; 5 threads
  // on fewer cores make the turns wait on descheduled threads.
  HeadStack<float> q(2, 2, 2 * kBackwardKeyBlock + 17, 16), k = q, v = q, d_out = q;
  for (Eigen::Index i = 0; i < q.count(); ++i) {
    q[i] = gaussian_matrix<float>(q.n(), q.d(), rng);
    k[i] = gaussian_matrix<float>(q.n(), q.d(), rng);
    v[i] = gaussian_matrix<float>(q.n(), q.d(), rng);
    d_out[i] = gaussian_matrix<float>(q.n(), q.d(), rng);
  }
  HeadStack<float> out = q;
  std::vector<Vec<float>> lse(static_cast<std::size_t>(q.count()));
  for (Eigen::Index i = 0; i < q.count(); ++i) out[i] = fused_attention(q[i], k[i], v[i], 0, lse[static_cast<std::size_t>(i)]);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const StackGradients<float> one = fused_attention_backward(q, k, v, out, lse, d_out);
  std::vector<StackGradients<float>> more;
  for (const int threads : {2, 3, 5}) {
    omp_set_num_threads(threads);
    more.push_back(fused_attention_backward(q, k, v, out, lse, d_out));
  }
  omp_set_num_threads(saved);
  for (Eigen::Index i = 0; i < q.count(); ++i) {
    INFO("head " << i);
    for (std::size_t t = 0; t < more.size(); ++t) {
      INFO("run " << t << " of 2, 3, 5 threads");
      CHECK(one.dq[i] == more[t].dq[i]);
      CHECK(one.dk[i] == more[t].dk[i]);
      CHECK(one.dv[i] == more[t].dv[i]);
    }
    const AttentionGradients<float> alone =
        fused_attention_backward(q[i], k[i], v[i], out[i], lse[static_cast<std::size_t>(i)], d_out[i]);
    CHECK(one.dq[i] == alone.dq);
    CHECK(one.dk[i] == alone.dk);
    CHECK(one.dv[i] == alone.dv);
  }
}

TEST_CASE("fused attention backward: large logits stay finite, bad arguments throw naming them") {
  const std::uint64_t seed = kAttentionTestSeed + 24;
  Rng rng(seed);
  INFO("seed " << seed);
  // Logits near 1e6: P is one-hot up to rounding and every exponent of the recomputation is <= 0.
  const Mat<float> q = gaussian_matrix<float>(70, 8, rng, 1e3), k = gaussian_matrix<float>(300, 8, rng, 1e3),
                   v = gaussian_matrix<float>(300, 5, rng), d_out = gaussian_matrix<float>(70, 5, rng);
  Vec<float> lse;
  const Mat<float> out = fused_attention(q, k, v, 0, lse);
  const AttentionGradients<float> g = fused_attention_backward(q, k, v, out, lse, d_out);
  CHECK(g.dq.allFinite());
  CHECK(g.dk.allFinite());
  CHECK(g.dv.allFinite());
  const auto message = [&](auto&& call) {
    try {
      call();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  CHECK(message([&] { fused_attention_backward(q, k, v, out, Vec<float>(lse.head(69)), d_out); }) ==
        "fused_attention_backward: lse has 69 entries for 70 queries");
  Vec<float> bad = lse;
  bad(3) = std::numeric_limits<float>::infinity();
  CHECK(message([&] { fused_attention_backward(q, k, v, out, bad, d_out); }) ==
        "fused_attention_backward: lse has a non-finite entry");
  CHECK(message([&] { fused_attention_backward(q, k, v, out, lse, Mat<float>(d_out.leftCols(4))); }) ==
        "fused_attention_backward: d_out is 70 x 4 but out is 70 x 5");
  CHECK(message([&] { fused_attention_backward(q, k, v, Mat<float>(out.topRows(69)), lse, d_out); }) ==
        "fused_attention_backward: out is 69 x 5; the forward's is 70 x 5");
}
