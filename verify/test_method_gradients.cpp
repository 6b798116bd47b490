// The gradients of the registry's methods (attention/method_gradients.hpp, what attnlab.attend_grad returns): the
// forward they differentiate is run_attention's (bit for bit where the code is shared), each gradient against central
// differences of run_attention, the same bits for 1 and 2 threads, and what has no backward pass refused. (Python's
// tests check the same through the module, and against PyTorch autograd.)
#include <doctest/doctest.h>

#include <Eigen/Core>
#include <cmath>
#include <omp.h>
#include <stdexcept>
#include <string>

#include "attnlab/attention/method_gradients.hpp"
#include "attnlab/attention/registry.hpp"
#include "attnlab/core/rng.hpp"
#include "support.hpp"

using namespace attnlab;

namespace {

const std::uint64_t kGradSeed = attnlab::testing::test_seed(20260301);  // ATTNLAB_TEST_SEED overrides it

HeadStack<double> gaussian_stack(Eigen::Index n, Eigen::Index d, double scale, Rng& rng) {
  HeadStack<double> s(2, 2, n, d);
  for (Eigen::Index i = 0; i < s.count(); ++i) s[i] = scale * gaussian_matrix(n, d, rng);
  return s;
}

struct Case {
  const char* method;
  Impl impl;
  MethodParams params;
};

std::vector<Case> cases(Eigen::Index n) {
  MethodParams linformer;
  linformer.projected = n / 2;
  MethodParams features;
  features.features = 8;
  MethodParams hot = features;
  hot.temperature = 3.0;
  MethodParams nystrom;
  nystrom.nystrom.landmarks = 3;
  MethodParams streaming;
  streaming.key_block = 4;
  return {{"exact", Impl::reference, {}},   {"linear-shen", Impl::reference, {}}, {"linear-elu", Impl::reference, {}},
          {"linformer", Impl::reference, linformer}, {"random-fourier", Impl::reference, features},
          {"random-fourier", Impl::reference, hot}, {"favor", Impl::reference, features},
          {"nystrom", Impl::reference, nystrom}, {"exact", Impl::fast, {}}, {"streaming", Impl::fast, streaming}};
}

MethodDraws draws_of(const AttentionMethod& m, const MethodParams& p, Eigen::Index n, Eigen::Index d) {
  Rng rng(kGradSeed + 1);
  return m.draw(p, n, d, rng);
}

double loss(const AttentionMethod& m, Impl impl, const HeadStack<double>& q, const HeadStack<double>& k, const HeadStack<double>& v,
            const HeadStack<double>& d_out, const MethodParams& p, const MethodDraws& draws) {
  const HeadStack<double> out = run_attention(m, impl, q, k, v, p, draws);
  double s = 0;
  for (Eigen::Index h = 0; h < out.count(); ++h) s += out[h].cwiseProduct(d_out[h]).sum();
  return s;
}

}  // namespace

TEST_CASE("method gradients: the forward is run_attention's, bit for bit where the code is shared") {
  Rng rng(kGradSeed);
  const Eigen::Index n = 10, d = 4;
  const HeadStack<double> q = gaussian_stack(n, d, 1, rng), k = gaussian_stack(n, d, 1, rng), v = gaussian_stack(n, 3, 1, rng);
  const HeadStack<double> d_out = gaussian_stack(n, 3, 1, rng);
  for (const Case& c : cases(n)) {
    const AttentionMethod& m = attention_method(c.method);
    INFO(c.method << " " << to_string(c.impl));
    const MethodDraws draws = draws_of(m, c.params, n, d);
    const MethodGradients<double> g = method_gradients(m, c.impl, q, k, v, d_out, c.params, draws);
    const HeadStack<double> out = run_attention(m, c.impl, q, k, v, c.params, draws);
    const std::string name = c.method;
    const bool shared = name != "linformer" && name != "nystrom";  // these two compute their forward in their own order
    for (Eigen::Index h = 0; h < out.count(); ++h) {
      if (shared) CHECK(g.out[h] == out[h]);
      // Otherwise the same function: rounding apart (|ratio| of the difference to n eps |out|, threshold 30).
      else ATTNLAB_CHECK_RATIO_LE((g.out[h] - out[h]).norm() / (n * 1e-16 * out[h].norm()), 30.0, "forward against run_attention");
    }
  }
}

TEST_CASE("method gradients: central differences of run_attention") {
  // Richardson-extrapolated central differences at h = 1e-3 err by O(h^4) ~ 1e-12 relative, rounding eps |L| / h ~ 1e-13:
  // a right gradient agrees within 1e-7 of its scale, a wrong term errs at O(1) of it.
  Rng rng(kGradSeed + 2);
  const Eigen::Index n = 6, d = 3;
  HeadStack<double> q = gaussian_stack(n, d, 0.7, rng), k = gaussian_stack(n, d, 0.7, rng), v = gaussian_stack(n, 2, 1, rng);
  const HeadStack<double> d_out = gaussian_stack(n, 2, 1, rng);
  for (const Case& c : cases(n)) {
    const AttentionMethod& m = attention_method(c.method);
    INFO(c.method << " " << to_string(c.impl));
    const MethodDraws draws = draws_of(m, c.params, n, d);
    const MethodGradients<double> g = method_gradients(m, c.impl, q, k, v, d_out, c.params, draws);
    double worst = 0;
    for (auto [x, grad] : {std::pair{&q, &g.dq}, {&k, &g.dk}, {&v, &g.dv}}) {
      double scale = 0, err = 0;
      for (Eigen::Index h = 0; h < x->count(); ++h)
        for (Eigen::Index j = 0; j < (*x)[h].cols(); ++j)
          for (Eigen::Index i = 0; i < (*x)[h].rows(); ++i) {
            double& entry = (*x)[h](i, j);
            const double keep = entry;
            const auto diff = [&](double step) {
              entry = keep + step;
              const double up = loss(m, c.impl, q, k, v, d_out, c.params, draws);
              entry = keep - step;
              const double down = loss(m, c.impl, q, k, v, d_out, c.params, draws);
              entry = keep;
              return (up - down) / (2 * step);
            };
            const double fd = (4 * diff(5e-4) - diff(1e-3)) / 3;
            scale = std::max(scale, std::abs(fd));
            err = std::max(err, std::abs(fd - (*grad)[h](i, j)));
          }
      worst = std::max(worst, err / scale);
    }
    ATTNLAB_CHECK_RATIO_LE(worst / 1e-7, 1.0, "largest |gradient - central difference| / max |gradient|, over 1e-7");
  }
}

TEST_CASE("method gradients: the same bits for 1 and 2 threads") {
  Rng rng(kGradSeed + 3);
  const Eigen::Index n = 24, d = 4;
  const HeadStack<double> q = gaussian_stack(n, d, 1, rng), k = gaussian_stack(n, d, 1, rng), v = gaussian_stack(n, d, 1, rng);
  const HeadStack<double> d_out = gaussian_stack(n, d, 1, rng);
  for (const Case& c : cases(n)) {
    const AttentionMethod& m = attention_method(c.method);
    INFO(c.method << " " << to_string(c.impl));
    const MethodDraws draws = draws_of(m, c.params, n, d);
    omp_set_num_threads(1);
    const MethodGradients<double> one = method_gradients(m, c.impl, q, k, v, d_out, c.params, draws);
    omp_set_num_threads(2);
    const MethodGradients<double> two = method_gradients(m, c.impl, q, k, v, d_out, c.params, draws);
    for (Eigen::Index h = 0; h < q.count(); ++h) CHECK((one.dq[h] == two.dq[h] && one.dk[h] == two.dk[h] && one.dv[h] == two.dv[h]));
  }
}

TEST_CASE("method gradients: what has no backward pass is refused with one line") {
  MethodParams p;
  CHECK(method_gradient_problem(attention_method("exact"), Impl::reference, p, 4, 4).empty());
  CHECK(method_gradient_problem(attention_method("exact"), Impl::fast, p, 4, 6).empty());
  CHECK(method_gradient_problem(attention_method("streaming"), Impl::reference, p, 4, 4).find("--impl fast") != std::string::npos);
  CHECK(method_gradient_problem(attention_method("favor"), Impl::fast, p, 4, 4) ==
        "--impl fast: favor has no fast backward pass; use --impl reference");
  CHECK(method_gradient_problem(attention_method("linear-elu"), Impl::reference, p, 4, 6).find("as many keys as queries") != std::string::npos);
  p.nystrom.pinv = PinvMethod::svd;
  CHECK(method_gradient_problem(attention_method("nystrom"), Impl::reference, p, 4, 4).find("--pinv iterative") != std::string::npos);
  p.nystrom.pinv = PinvMethod::iterative;
  p.nystrom.iterations = 0;
  CHECK(method_gradient_problem(attention_method("nystrom"), Impl::reference, p, 4, 4).find("not 0") != std::string::npos);
  Rng rng(kGradSeed + 4);
  const HeadStack<double> q = gaussian_stack(4, 2, 1, rng), k = gaussian_stack(6, 2, 1, rng), v = gaussian_stack(6, 2, 1, rng);
  CHECK_THROWS_AS(method_gradients(attention_method("exact"), Impl::reference, q, k, v, q, MethodParams{}), std::invalid_argument);
  CHECK_THROWS_AS(method_gradients(attention_method("exact"), Impl::fast, q, k, v, k, MethodParams{}), std::invalid_argument);
}
