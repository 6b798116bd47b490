// The method registry: one spelling per method, each name finds its own kernels and cost, the fast
// kernel agrees with the reference, and what a kernel cannot take is refused.
#include <doctest/doctest.h>

#include <Eigen/Core>
#include <set>
#include <stdexcept>
#include <string>

#include "attnlab/attention/attention_cost.hpp"
#include "attnlab/attention/registry.hpp"
#include "attnlab/core/rng.hpp"
#include "support.hpp"

using namespace attnlab;

namespace {

const std::uint64_t kRegistrySeed = attnlab::testing::test_seed(20251126);  // ATTNLAB_TEST_SEED overrides it

HeadStack<double> gaussian_stack(Eigen::Index n, Eigen::Index d, Rng& rng) {
  HeadStack<double> s(2, 2, n, d);
  for (Eigen::Index i = 0; i < s.count(); ++i) s[i] = gaussian_matrix(n, d, rng);
  return s;
}

double relative_difference(const HeadStack<double>& a, const HeadStack<double>& b) {
  double num = 0, den = 0;
  for (Eigen::Index i = 0; i < a.count(); ++i) {
    num += (a[i] - b[i]).squaredNorm();
    den += b[i].squaredNorm();
  }
  return std::sqrt(num / den);
}

}  // namespace

TEST_CASE("registry: one spelling per method, in the documented order") {
  const std::vector<std::string> expected = {"exact", "streaming", "linear-shen", "linear-elu", "linformer",
                                             "random-fourier", "favor", "nystrom"};
  CHECK(attention_method_names() == expected);
  CHECK(attention_method_list() == "exact, streaming, linear-shen, linear-elu, linformer, random-fourier, favor, nystrom");
  for (const std::string& name : expected) {
    const AttentionMethod& m = attention_method(name);
    CHECK(m.name == name);
    CHECK(!m.summary.empty());
    // (Parenthesised: doctest cannot print function pointers.)
    CHECK((m.reference_float != nullptr && m.reference_double != nullptr));
    CHECK(((m.fast_float == nullptr) == (m.fast_double == nullptr)));
    CHECK((m.cost != nullptr && m.draw != nullptr));
  }
  // Old spellings are not names: the message lists the valid ones.
  for (const char* old : {"softmax", "linear", "linear_elu", "linear_shen", "random_features", "Exact", ""}) {
    INFO(old);
    try {
      attention_method(old);
      FAIL("accepted");
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      CHECK(what.find(std::string("'") + old + "'") != std::string::npos);
      CHECK(what.find(attention_method_list()) != std::string::npos);
    }
  }
  // The methods with a fast kernel.
  std::set<std::string> fast;
  for (const AttentionMethod& m : attention_methods())
    if (m.has_fast()) fast.insert(m.name);
  CHECK(fast == std::set<std::string>{"exact", "streaming", "linear-shen", "linear-elu", "linformer", "nystrom"});
}

TEST_CASE("registry: each method's cost is its attention_cost.hpp model at its parameters") {
  MethodParams p;
  p.key_block = 32, p.projected = 16, p.features = 48, p.nystrom.landmarks = 24;
  const long long n = 1000, d = 64;
  const std::size_t s = sizeof(float);
  const auto same = [](AttentionCost a, AttentionCost b) {
    return a.multiply_adds == b.multiply_adds && a.workspace_bytes == b.workspace_bytes;
  };
  CHECK(same(attention_method("exact").cost(p, n, d, s), softmax_attention_cost(n, d, s)));
  CHECK(same(attention_method("streaming").cost(p, n, d, s), streaming_attention_cost(n, d, 32, s)));
  CHECK(same(attention_method("linear-shen").cost(p, n, d, s), efficient_attention_cost(n, d, s)));
  CHECK(same(attention_method("linear-elu").cost(p, n, d, s), elu_linear_attention_cost(n, d, s)));
  CHECK(same(attention_method("linformer").cost(p, n, d, s), linformer_attention_cost(n, d, 16, s)));
  CHECK(same(attention_method("random-fourier").cost(p, n, d, s), random_fourier_attention_cost(n, d, 48, s)));
  CHECK(same(attention_method("favor").cost(p, n, d, s), favor_attention_cost(n, d, 48, s)));
  CHECK(same(attention_method("nystrom").cost(p, n, d, s),
             nystrom_attention_cost(n, d, 24, kNystromformerPinvIterations, s)));
  p.nystrom.pinv = PinvMethod::svd;
  CHECK(same(attention_method("nystrom").cost(p, n, d, s), nystrom_attention_cost(n, d, 24, -1, s)));
  // Reduced sizes above n are capped at n, as the kernels cap them.
  CHECK(same(attention_method("linformer").cost(p, 10, d, s), linformer_attention_cost(10, d, 10, s)));
}

TEST_CASE("registry: draws have the shapes their method needs, and only random methods draw") {
  MethodParams p;
  p.projected = 5, p.features = 12;
  for (const AttentionMethod& m : attention_methods()) {
    INFO(m.name);
    Rng rng(kRegistrySeed);
    const MethodDraws draws = m.draw(p, 20, 6, rng);
    CHECK(draws.projections.has_value() == (m.name == "linformer"));
    CHECK(draws.features.has_value() == (m.name == "random-fourier" || m.name == "favor"));
    CHECK(m.random == (draws.projections.has_value() || draws.features.has_value()));
    if (draws.projections) {
      CHECK(draws.projections->e.rows() == 5);
      CHECK(draws.projections->e.cols() == 20);
      CHECK(draws.projections->f.rows() == 5);
    }
    if (draws.features) {
      CHECK(draws.features->features() == 12);
      CHECK(draws.features->dim() == 6);
    }
  }
}

TEST_CASE("registry: each fast kernel agrees with its reference to rounding (double)") {
  Rng rng(kRegistrySeed);
  INFO("seed " << kRegistrySeed);
  const Eigen::Index n = 96, d = 16;
  const HeadStack<double> q = gaussian_stack(n, d, rng), k = gaussian_stack(n, d, rng), v = gaussian_stack(n, d, rng);
  MethodParams p;
  p.key_block = 7, p.projected = 12, p.nystrom.landmarks = 8;
  for (const AttentionMethod& m : attention_methods()) {
    if (!m.has_fast()) continue;
    INFO(m.name);
    Rng draw_rng(kRegistrySeed + 1);
    const MethodDraws draws = m.draw(p, n, d, draw_rng);
    const HeadStack<double> ref = run_attention(m, Impl::reference, q, k, v, p, draws);
    const HeadStack<double> fast = run_attention(m, Impl::fast, q, k, v, p, draws);
    // Both compute the same quantity in a different order: the difference is rounding, far below
    // 1e-10 in double, while a wrong parameter (block, k, landmarks) or kernel moves it to O(1e-2).
    CHECK(relative_difference(fast, ref) <= 1e-10);
  }
}

TEST_CASE("registry: what a kernel cannot take is refused with std::invalid_argument") {
  Rng rng(kRegistrySeed);
  const HeadStack<double> q = gaussian_stack(16, 4, rng);
  MethodParams p;
  CHECK_THROWS_AS(run_attention(attention_method("random-fourier"), Impl::fast, q, q, q, p), std::invalid_argument);
  CHECK_THROWS_AS(run_attention(attention_method("linformer"), Impl::reference, q, q, q, p), std::invalid_argument);
  CHECK_THROWS_AS(run_attention(attention_method("favor"), Impl::reference, q, q, q, p), std::invalid_argument);
  p.nystrom.landmarks = 4;
  CHECK(fast_kernel_applies(attention_method("nystrom"), p));
  p.nystrom.pinv = PinvMethod::svd;
  CHECK(!fast_kernel_applies(attention_method("nystrom"), p));
  CHECK_THROWS_AS(run_attention(attention_method("nystrom"), Impl::fast, q, q, q, p), std::invalid_argument);
  p.nystrom.pinv = PinvMethod::iterative, p.nystrom.iterations = kNystromformerPinvIterations + 1;
  CHECK(!fast_kernel_applies(attention_method("nystrom"), p));
}
