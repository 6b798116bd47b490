// Checks of the trainable attention methods (issue 14): forward against the library's kernels, backward
// against central finite differences in double, float against double, and checks that can fail.
#include <doctest/doctest.h>

#include <cmath>
#include <iomanip>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention_test_support.hpp"
#include "attnlab/attention/exact_train.hpp"
#include "attnlab/attention/linear_attention.hpp"
#include "attnlab/attention/linformer.hpp"
#include "attnlab/attention/nystrom.hpp"
#include "attnlab/attention/nystrom_train.hpp"
#include "attnlab/attention/random_features.hpp"
#include "attnlab/attention/random_features_train.hpp"
#include "attnlab/attention/softmax_attention.hpp"
#include "attnlab/attention/trainable.hpp"
#include "attnlab/qk/qk_split.hpp"
#include "attnlab/qk/reparameterized_attention.hpp"
#include "support.hpp"

using namespace attnlab;
using namespace attnlab::testing;

namespace {

const std::uint64_t kTrainableAttentionSeed = attnlab::testing::test_seed(20251125);  // ATTNLAB_TEST_SEED overrides it

// Central differences D(h) = (L(x + h) - L(x - h)) / 2h in double, extrapolated (Richardson):
// g_fd = (4 D(h) - D(2h)) / 3 cancels the h^2 L''' / 6 term of D(h), leaving truncation
// ~ h^4 |L^(5)| / 30 plus the rounding of the losses, ~ 1.5 N eps |L|_abs / h. Plain central
// differences are not enough for random-fourier: its signed denominator can come near zero, and
// at n = 3, d_k = 2 h^2 |L'''| / 6 alone reached 1.5e-4 of the gradient at h = 1e-5.
// h = 1e-4 on inputs of size ~1 balances the two terms near eps^(1/5) for the extrapolated
// quotient: truncation ~ 3e-18 |L^(5)|, rounding ~ 2e-12 N |L|_abs. Where the method's own
// conditioning kappa (below: random-fourier's denominator cancellation, nystrom's |A| |Z|) puts a
// singularity of L at a distance ~ 1/kappa, the step is h / kappa: truncation scales with
// (h / distance)^4, so this keeps it where it is for well-conditioned inputs (fd_kappa()).
constexpr double kAttentionFdStep = 1e-4;
// The scaled ratio |g - g_fd|_max / (|g|_max + tiny) must stay below this. With fifth derivatives
// up to ~1e10 times the gradient the truncation term is ~3e-8, so 1e-6 leaves a margin of 30 while
// an error of one part in a million in any entry of a gradient fails.
constexpr double kAttentionFdTolerance = 1e-6;
// LAPACK's threshold for its scaled residual ratios (dtest.in): a forward error divided by its
// derived bound (which already carries n eps) must stay below this.
constexpr double kForwardRatioLimit = 30;

// One head's inputs built as a layer builds them: q = X W_Q, k = X W_K from one X (n x d_x), so the
// symmetric method's reference X S_w X^T can be formed from the same numbers; entries of q, k ~ N(0, 1).
struct Inputs {
  Mat<double> x, wq, wk;
  Mat<double> q, k, v, d_out;
};

Inputs make_inputs(Eigen::Index n, Eigen::Index d_k, Eigen::Index d_v, Rng& rng) {
  Inputs in;
  const Eigen::Index d_x = d_k + 2;
  in.x = gaussian_matrix(n, d_x, rng);
  in.wq = gaussian_matrix(d_x, d_k, rng, 1 / std::sqrt(static_cast<double>(d_x)));
  in.wk = gaussian_matrix(d_x, d_k, rng, 1 / std::sqrt(static_cast<double>(d_x)));
  in.q = in.x * in.wq;
  in.k = in.x * in.wk;
  in.v = gaussian_matrix(n, d_v, rng);
  in.d_out = gaussian_matrix(n, d_v, rng);
  return in;
}

template <typename T>
std::unique_ptr<TrainableAttention<T>> build(const TrainableAttentionConfig& c) {
  return make_trainable_attention<T>(c);
}

TrainableAttentionConfig config_of(const std::string& method, Eigen::Index n, Eigen::Index d_k, Eigen::Index d_v,
                                   std::uint64_t seed) {
  TrainableAttentionConfig c;
  c.method = method;
  c.n = n;
  c.d_k = d_k;
  c.d_v = d_v;
  c.heads = 2;
  c.seed = seed;
  return c;
}

// The configurations each method is checked in at size (n, d_k, d_v): its defaults and, where it
// has options, values that exercise them (n not divisible by the landmarks, few features).
std::vector<TrainableAttentionConfig> configs_for(const std::string& method, Eigen::Index n, Eigen::Index d_k,
                                                  Eigen::Index d_v, std::uint64_t seed) {
  std::vector<TrainableAttentionConfig> out = {config_of(method, n, d_k, d_v, seed)};
  auto with = [&](auto set) {
    TrainableAttentionConfig c = config_of(method, n, d_k, d_v, seed);
    set(c);
    out.push_back(c);
  };
  if (method == "linformer" && n >= 3) with([&](auto& c) { c.projection_k = n - 1; });
  if (method == "random-fourier" || method == "favor") with([&](auto& c) { c.features = 8; });
  if (method == "nystrom" && n >= 3) {
    with([&](auto& c) { c.landmarks = 2; });          // n not divisible by 2 at n = 3, 7
    with([&](auto& c) { c.landmarks = (n + 1) / 3; });  // 20 rows in 7 segments of 2 and 3
    with([&](auto& c) { c.pinv_iterations = 2; });
  }
  return out;
}

template <typename T>
struct Grads {
  Mat<T> q, k, v;
  std::vector<Mat<T>> params;
};

template <typename T>
Mat<T> run_forward(const TrainableAttention<T>& m, Eigen::Index head, const Mat<T>& q, const Mat<T>& k,
                   const Mat<T>& v) {
  Mat<T> out;
  m.forward(head, q, k, v, out, nullptr);
  return out;
}

template <typename T>
Grads<T> run_backward(TrainableAttention<T>& m, Eigen::Index head, const Mat<T>& q, const Mat<T>& k,
                      const Mat<T>& v, const Mat<T>& d_out, Mat<T>* out = nullptr) {
  Mat<T> o;
  std::unique_ptr<AttentionTape> tape;
  m.forward(head, q, k, v, o, &tape);
  Grads<T> g;
  for (Mat<T>* p : m.parameters()) g.params.push_back(Mat<T>::Zero(p->rows(), p->cols()));
  m.backward(head, *tape, d_out, g.q, g.k, g.v, &g.params);
  if (out != nullptr) *out = o;
  return g;
}

// The loss whose gradient is checked: L = sum(d_out o out), so dL/d out = d_out.
double loss(const TrainableAttention<double>& m, Eigen::Index head, const Inputs& in, const Mat<double>& q,
            const Mat<double>& k, const Mat<double>& v) {
  return run_forward(m, head, q, k, v).cwiseProduct(in.d_out).sum();
}

// The FD gradient of every input and parameter at step h = kAttentionFdStep / kappa, and the absolute floor
// `tiny` of the ratio: the rounding noise of an FD quotient, 1.5 N kappa eps sum|d_out o out| / h
// with N = n (d_v + 1) + d_k + 8 roundings along the way, amplified by the forward's conditioning
// kappa >= 1, divided by the tolerance, so that a ratio above the tolerance cannot come from
// rounding alone (a gradient that is exactly zero, as dq at n = 1, then passes).
struct FdResult {
  Grads<double> fd;
  double tiny = 0;
};

FdResult finite_differences(TrainableAttention<double>& m, Eigen::Index head, const Inputs& in, double kappa) {
  FdResult r;
  const double h = kAttentionFdStep / kappa;
  auto fd_of = [&](Mat<double>& x, auto&& eval) {
    Mat<double> g(x.rows(), x.cols());
    for (Eigen::Index j = 0; j < x.cols(); ++j)
      for (Eigen::Index i = 0; i < x.rows(); ++i) {
        const double x0 = x(i, j);
        auto central = [&](double h) {
          x(i, j) = x0 + h;
          const double lp = eval();
          x(i, j) = x0 - h;
          const double lm = eval();
          x(i, j) = x0;
          return (lp - lm) / (2 * h);
        };
        const double d_h = central(h), d_2h = central(2 * h);
        g(i, j) = (4 * d_h - d_2h) / 3;
      }
    return g;
  };
  Mat<double> q = in.q, k = in.k, v = in.v;
  auto eval = [&] { return loss(m, head, in, q, k, v); };
  r.fd.q = fd_of(q, eval);
  r.fd.k = fd_of(k, eval);
  r.fd.v = fd_of(v, eval);
  for (Mat<double>* p : m.parameters()) r.fd.params.push_back(fd_of(*p, eval));
  const double n = static_cast<double>(in.q.rows()), d_k = static_cast<double>(in.q.cols()),
               d_v = static_cast<double>(in.v.cols());
  const double l_abs = run_forward(m, head, in.q, in.k, in.v).cwiseProduct(in.d_out).cwiseAbs().sum();
  const double noise = 1.5 * (n * (d_v + 1) + d_k + 8) * kappa * eps<double>() * (l_abs + 1) / h;
  r.tiny = noise / kAttentionFdTolerance;
  return r;
}

double scaled_ratio(const Mat<double>& g, const Mat<double>& g_fd, double tiny) {
  if (g.size() == 0) return 0;
  return (g - g_fd).cwiseAbs().maxCoeff() / (g.cwiseAbs().maxCoeff() + tiny);
}

// Every ratio of one check, largest first reported.
struct FdRatios {
  double q = 0, k = 0, v = 0;
  std::vector<double> params;
  double max() const {
    double m = std::max({q, k, v});
    for (double p : params) m = std::max(m, p);
    return m;
  }
};

FdRatios fd_ratios(const Grads<double>& g, const FdResult& fd) {
  FdRatios r;
  r.q = scaled_ratio(g.q, fd.fd.q, fd.tiny);
  r.k = scaled_ratio(g.k, fd.fd.k, fd.tiny);
  r.v = scaled_ratio(g.v, fd.fd.v, fd.tiny);
  for (std::size_t i = 0; i < g.params.size(); ++i) r.params.push_back(scaled_ratio(g.params[i], fd.fd.params[i], fd.tiny));
  return r;
}

std::string describe_ratios(const FdRatios& r) {
  std::ostringstream s;
  s << std::scientific << std::setprecision(2) << "ratios dq " << r.q << " dk " << r.k << " dv " << r.v;
  for (std::size_t i = 0; i < r.params.size(); ++i) s << " param" << i << " " << r.params[i];
  return s.str();
}

// The library's kernel for the method on the same numbers, with a bound on |ours - library| (each
// within its forward-error bound of the exact value, so within the sum of both of each other).
// std::nullopt where the library has no kernel for the method.
struct Reference {
  Mat<double> out;
  double bound = 0;
};

template <typename T>
std::optional<Reference> library_reference(const std::string& method, TrainableAttention<T>& m,
                                           Eigen::Index head, const Inputs& in) {
  const Mat<T> q = in.q.cast<T>(), k = in.k.cast<T>(), v = in.v.cast<T>();
  if (method == "exact") {
    // softmax_output_bound: 4 (d s_max + n + 4) eps max|v| (verify/attention_test_support.hpp).
    return Reference{softmax_attention(q, k, v).template cast<double>(), 2 * softmax_output_bound(q, k, v)};
  }
  if (method == "symmetric") {
    // The library's reparameterised route: X S_w X^T with S_w = sym(W_Q W_K^T) formed, then the
    // row softmax of attention_from_scores. Its logits differ from (q k^T + k q^T) / 2 by the
    // roundings of two d_x-term products: |ds| <= 4 (d_x + d_k + 2) eps |x|^2 |W_Q|_F |W_K|_F.
    // A logit error ds moves an output by at most 2 |ds| max|v| (the softmax is 1-Lipschitz from
    // max-norm to 1-norm per row, and out_i - v_j spans 2 max|v|); normalising adds (n + 4) eps.
    const Mat<T> x = in.x.cast<T>(), wq = in.wq.cast<T>(), wk = in.wk.cast<T>();
    const Mat<T> s_w = symmetric_part(Mat<T>(qk_product(wq, wk)));
    const T scale = T(1) / std::sqrt(static_cast<T>(q.cols()));
    const Mat<T> ref = attention_from_scores(merged_scores(x, s_w), v, scale);
    const double dx = static_cast<double>(x.cols()), dk = static_cast<double>(q.cols()),
                 n = static_cast<double>(q.rows());
    const double x2 = in.x.rowwise().squaredNorm().maxCoeff();
    const double s_max = in.q.rowwise().norm().maxCoeff() * in.k.rowwise().norm().maxCoeff() / std::sqrt(dk);
    const double ds_library = 4 * (dx + dk + 2) * eps<T>() * x2 * in.wq.norm() * in.wk.norm() / std::sqrt(dk);
    const double ds_ours = 2 * (dk + 2) * eps<T>() * s_max;
    const double vmax = std::max(1.0, in.v.cwiseAbs().maxCoeff());
    const double bound = (2 * (ds_library + ds_ours) + 8 * (n + 4) * eps<T>()) * vmax;
    return Reference{ref.template cast<double>(), bound};
  }
  const double n = static_cast<double>(q.rows()), dk = static_cast<double>(q.cols());
  const double vmax = std::max(1.0, in.v.cwiseAbs().maxCoeff());
  const double xmax = std::max(in.q.cwiseAbs().maxCoeff(), in.k.cwiseAbs().maxCoeff());
  if (method == "linear-elu" || method == "linear-shen") {
    // Both are convex combinations of the rows of V with positive weights built from exp() of
    // arguments up to 2 max|x| (after a maximum subtraction) and sums over d_k and n terms: each
    // weight carries a relative error <= (2 max|x| + d_k + n + 4) eps, which moves an output by at
    // most twice that times max|v|; twice again for the two implementations.
    const Mat<T> ref = method == "linear-elu" ? elu_linear_attention(q, k, v) : efficient_attention(q, k, v);
    return Reference{ref.template cast<double>(), 4 * (2 * xmax + dk + n + 4) * eps<T>() * vmax};
  }
  if (method == "linformer") {
    // softmax over kp logits q_i . (E k)_j / sqrt(d_k), then the mix of F V. A logit carries an
    // absolute error <= (n + d_k) eps |q_i| |E|_inf |k|_max / sqrt(d_k) (E K sums n terms), which moves
    // an output by 2 |ds| max|FV|; F V itself is off by n eps |F|_inf max|v|, the mixing by kp eps.
    const auto p = m.parameters();
    LinformerProjections<T> proj{*p[0], *p[1]};
    const Mat<T> ref = linformer_attention(q, k, v, proj);
    const double kp = static_cast<double>(proj.k());
    const double e_inf = proj.e.template cast<double>().cwiseAbs().rowwise().sum().maxCoeff();
    const double f_inf = proj.f.template cast<double>().cwiseAbs().rowwise().sum().maxCoeff();
    const double ds = (n + dk + 4) * eps<T>() * in.q.rowwise().norm().maxCoeff() * e_inf *
                      in.k.rowwise().norm().maxCoeff() / std::sqrt(dk);
    const double fv_max = f_inf * vmax;
    const double bound = 2 * (2 * ds * fv_max + (n + kp + 4) * eps<T>() * fv_max);
    return Reference{ref.template cast<double>(), bound};
  }
  if (method == "random-fourier") {
    // A signed estimate: num_i = sum_j w_ij v_j and den_i = sum_j w_ij with w_ij = phi(q_i) . b_j phi(k_j)
    // carry errors <= g sum_j a_ij |v_j| and g sum_j a_ij, a_ij = |phi(q_i)| . b_j |phi(k_j)|, with
    // g = (2D + n + d_k + max|w . x| + 8) eps (sin and cos of arguments up to max|w . x|), so
    // |d out_i| <= g sum_j a_ij (|v_j| + |out_i|) / |den_i|: the denominator's conditioning enters.
    const Mat<T>& w = *m.buffers()[static_cast<std::size_t>(head)];
    const RandomFeatureDraw draw{w.template cast<double>(), 1.0, false};
    const double tau = std::sqrt(dk);
    const Mat<T> ref = random_fourier_attention(q, k, v, draw, tau);
    const Mat<double> phi_q = fourier_features(in.q, draw), phi_k = fourier_features(in.k, draw);
    const Vec<double> sq = in.k.rowwise().squaredNorm();
    const Vec<double> b = ((sq.array() - sq.maxCoeff()) / (2 * tau)).exp().matrix();
    const Mat<double> wts = phi_q * (b.asDiagonal() * phi_k).transpose();
    const Mat<double> abs_wts = phi_q.cwiseAbs() * (b.asDiagonal() * phi_k).cwiseAbs().transpose();
    const Mat<double> out = ref.template cast<double>();
    const double D = static_cast<double>(w.rows());
    const double arg = draw.w.rowwise().norm().maxCoeff() * std::max(in.q.rowwise().norm().maxCoeff(), in.k.rowwise().norm().maxCoeff());
    const double g = (2 * D + n + dk + arg + 8) * eps<T>();
    double bound = 0;
    for (Eigen::Index i = 0; i < q.rows(); ++i) {
      const double spread = abs_wts.row(i).dot(in.v.cwiseAbs().rowwise().maxCoeff()) +
                            abs_wts.row(i).sum() * out.row(i).cwiseAbs().maxCoeff();
      bound = std::max(bound, g * spread / std::abs(wts.row(i).sum()));
    }
    return Reference{out, 2 * bound};
  }
  if (method == "favor") {
    // Positive weights over the features, hence a convex combination of feature means that are
    // convex combinations of V: each weight carries a relative error <= (arg + D + n + d_k + 8) eps,
    // arg bounding the exponents |w . y| + |y|^2 / 2 (y = d_k^(-1/4) x) and log ksum <= log n.
    const Mat<T>& w = *m.buffers()[static_cast<std::size_t>(head)];
    const RandomFeatureDraw draw{w.template cast<double>(), 1.0, true};
    const Mat<T> ref = favor_attention(q, k, v, draw);
    const double s = 1 / std::sqrt(std::sqrt(dk));
    const double y = s * std::max(in.q.rowwise().norm().maxCoeff(), in.k.rowwise().norm().maxCoeff());
    const double arg = 2 * (2 * draw.w.rowwise().norm().maxCoeff() * y + y * y / 2 + std::log(n + 1));
    const double D = static_cast<double>(w.rows());
    return Reference{ref.template cast<double>(), 4 * (arg + D + n + dk + 8) * eps<T>() * vmax};
  }
  if (method == "nystrom") {
    // Both run the same passes (segment means, three softmaxes, the same pseudoinverse steps, the
    // same products), so they differ by roundings only, amplified by the factors the errors pass
    // through: out = F Z (B V), an error in A moves Z by up to |Z|^2 |dA| per step. We bound
    // |d out| <= g |F|_inf |Z|_inf |B|_inf max|v| (1 + 7 t |A|_inf |Z|_inf) with
    // g = (n + m + d_k + 8) eps: relative errors of the factors, and of the t steps of Z.
    const auto& nm = dynamic_cast<const NystromTrain<T>&>(m);
    NystromOptions options;
    options.landmarks = nm.landmarks();
    options.iterations = nm.iterations();
    const Mat<T> ref = nystrom_attention(q, k, v, options);
    const NystromFactors<double> fac = nystrom_factors(in.q, in.k, nm.landmarks());
    const Mat<double> z = iterative_pinv(fac.a, nm.iterations());
    auto inf = [](const Mat<double>& x) { return x.cwiseAbs().rowwise().sum().maxCoeff(); };
    const double g = (n + static_cast<double>(nm.landmarks()) + dk + 8) * eps<T>();
    const double amp = 1 + 7 * nm.iterations() * inf(fac.a) * inf(z);
    return Reference{ref.template cast<double>(), 2 * g * inf(fac.f) * inf(z) * inf(fac.b) * vmax * amp};
  }
  return std::nullopt;
}

// The length of the longest chain of roundings in the method's passes (n, d_k, d_v and the method's
// own inner width), for the float-versus-double bound.
double chain_length(const TrainableAttentionConfig& c, TrainableAttention<double>& m) {
  double inner = 0;
  if (c.method == "random-fourier") inner = 2 * static_cast<double>(m.buffers().front()->rows());
  if (c.method == "favor") inner = static_cast<double>(m.buffers().front()->rows());
  if (c.method == "linformer") inner = static_cast<double>(m.parameters().front()->rows());
  if (c.method == "nystrom") {
    const auto& nm = dynamic_cast<const NystromTrain<double>&>(m);
    inner = static_cast<double>(nm.landmarks() * (1 + nm.iterations()));
  }
  return static_cast<double>(c.n + c.d_k + c.d_v) + inner;
}

// How much the method's own conditioning amplifies rounding, from the double forward's tape: the
// signed denominator of random-fourier (sum_j |w_ij| / |sum_j w_ij|, as in library_reference), and
// the pseudoinverse of nystrom (|A|_inf |Z|_inf, Z's sensitivity to A); 1 for the others, whose
// weights are positive.
double conditioning(const TrainableAttentionConfig& c, const AttentionTape& tape) {
  if (c.method == "random-fourier") {
    const auto& t = dynamic_cast<const RandomFourierTape<double>&>(tape);
    const Vec<double> abs_den = t.phi_q.cwiseAbs() * t.phi_kb.cwiseAbs().colwise().sum().transpose();
    return (abs_den.array() / t.den.array().abs()).maxCoeff();
  }
  if (c.method == "nystrom") {
    const auto& t = dynamic_cast<const NystromTape<double>&>(tape);
    auto inf = [](const Mat<double>& x) { return x.cwiseAbs().rowwise().sum().maxCoeff(); };
    return inf(t.a_t.transpose()) * inf(t.z.back());
  }
  return 1;
}

// The conditioning of the double forward at `in`, at least 1: the FD step is kAttentionFdStep / kappa.
double fd_kappa(const TrainableAttentionConfig& c, TrainableAttention<double>& m, Eigen::Index head,
                const Inputs& in) {
  Mat<double> out;
  std::unique_ptr<AttentionTape> tape;
  m.forward(head, in.q, in.k, in.v, out, &tape);
  return std::max(1.0, conditioning(c, *tape));
}

// Central differences assume L smooth on [x - 2h, x + 2h]. elu(x) + 1 has a kink in its second
// derivative at x = 0 (exp(x) on the left, x + 1 on the right), where the FD quotient of an entry
// within 2h of 0 is off by O(h) (7.9e-7 of the gradient was seen at n = 7, d_k = 2). For
// linear-elu, entries of q and k closer than 4 kAttentionFdStep to 0 are moved to +-4 kAttentionFdStep: the check
// then measures the backward, not the kink. (The rescaling of all-negative rows is not a kink:
// it leaves the output unchanged.)
Inputs away_from_kinks(const TrainableAttentionConfig& c, Inputs in) {
  if (c.method != "linear-elu") return in;
  auto nudge = [](Mat<double>& x) {
    for (Eigen::Index j = 0; j < x.cols(); ++j)
      for (Eigen::Index i = 0; i < x.rows(); ++i)
        if (std::abs(x(i, j)) < 4 * kAttentionFdStep) x(i, j) = x(i, j) < 0 ? -4 * kAttentionFdStep : 4 * kAttentionFdStep;
  };
  nudge(in.q);
  nudge(in.k);
  return in;
}

const std::vector<Eigen::Index>& test_ns() {
  static const std::vector<Eigen::Index> ns = {1, 2, 3, 7, 20};
  return ns;
}
const std::vector<Eigen::Index>& test_dks() {
  static const std::vector<Eigen::Index> dks = {1, 2, 5};
  return dks;
}
Eigen::Index d_v_for(Eigen::Index n, Eigen::Index d_k) { return 1 + (n + d_k) % 4; }

// Runs `check` on every method, size and configuration, with a fresh seed for each, printed on failure.
template <typename Check>
void for_every_case(std::uint64_t base_seed, Check&& check) {
  std::uint64_t index = 0;
  for (const std::string& method : trainable_attention_names())
    for (Eigen::Index n : test_ns())
      for (Eigen::Index d_k : test_dks()) {
        const Eigen::Index d_v = d_v_for(n, d_k);
        for (const auto& c : configs_for(method, n, d_k, d_v, derive_seed(base_seed, index))) {
          const std::uint64_t seed = derive_seed(base_seed, 1000 + index++);
          INFO(method << " n=" << n << " d_k=" << d_k << " d_v=" << d_v << " config seed=" << c.seed
                      << " input seed=" << seed);
          Rng rng(seed);
          check(c, make_inputs(n, d_k, d_v, rng));
        }
      }
}

}  // namespace

TEST_CASE("trainable attention: the names, the factory's errors and describe()") {
  // The names are a subset of the canonical list, in its order.
  const std::vector<std::string> canonical = {"exact",          "linear-elu", "linear-shen", "linformer",
                                              "random-fourier", "favor",      "nystrom",     "symmetric"};
  std::size_t at = 0;
  for (const std::string& name : trainable_attention_names()) {
    while (at < canonical.size() && canonical[at] != name) ++at;
    INFO(name);
    REQUIRE(at < canonical.size());
  }
  TrainableAttentionConfig c = config_of("no-such-method", 4, 2, 2, 1);
  try {
    (void)make_trainable_attention<float>(c);
    FAIL("an unknown method was accepted");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CHECK(what.find("no-such-method") != std::string::npos);
    for (const std::string& name : trainable_attention_names()) CHECK(what.find(name) != std::string::npos);
  }
  for (const std::string& name : trainable_attention_names()) {
    INFO(name);
    auto bad = config_of(name, 0, 2, 2, 1);
    CHECK_THROWS_WITH_AS(make_trainable_attention<double>(bad), doctest::Contains("n (= 0)"), std::invalid_argument);
    bad = config_of(name, 4, 0, 2, 1);
    CHECK_THROWS_WITH_AS(make_trainable_attention<double>(bad), doctest::Contains("d_k (= 0)"), std::invalid_argument);
    bad = config_of(name, 4, 2, 2, 1);
    bad.heads = 0;
    CHECK_THROWS_WITH_AS(make_trainable_attention<double>(bad), doctest::Contains("heads (= 0)"), std::invalid_argument);
    bad = config_of(name, 4, 2, 2, 1);
    bad.features = -1;
    CHECK_THROWS_WITH_AS(make_trainable_attention<double>(bad), doctest::Contains("features (= -1)"),
                         std::invalid_argument);
    const auto m = make_trainable_attention<float>(config_of(name, 4, 2, 3, 1));
    CHECK(m->name() == name);
    CHECK(m->describe().find(name) != std::string::npos);
    CHECK(m->parameter_names().size() == m->parameters().size());
    CHECK(m->buffer_names().size() == m->buffers().size());
  }
}

TEST_CASE("trainable attention: misuse of forward and backward is refused, naming the value") {
  Rng rng(kTrainableAttentionSeed);
  const Inputs in = make_inputs(5, 3, 2, rng);
  for (const std::string& name : trainable_attention_names()) {
    INFO(name);
    auto m = make_trainable_attention<double>(config_of(name, 5, 3, 2, 1));
    Mat<double> out;
    CHECK_THROWS_WITH_AS(m->forward(2, in.q, in.k, in.v, out, nullptr), doctest::Contains("head (= 2)"),
                         std::invalid_argument);
    const Mat<double> q4 = in.q.topRows(4);
    CHECK_THROWS_AS(m->forward(0, q4, in.k, in.v, out, nullptr), std::invalid_argument);
    std::unique_ptr<AttentionTape> tape;
    m->forward(0, in.q, in.k, in.v, out, &tape);
    Mat<double> dq, dk, dv;
    const Mat<double> bad_d_out = in.d_out.leftCols(1);
    CHECK_THROWS_AS(m->backward(0, *tape, bad_d_out, dq, dk, dv, nullptr), std::invalid_argument);
    const AttentionTape foreign;
    CHECK_THROWS_WITH_AS(m->backward(0, foreign, in.d_out, dq, dk, dv, nullptr), doctest::Contains("tape"),
                         std::invalid_argument);
  }
}

TEST_CASE("trainable attention: forward equals the library's kernel for the method (double and float)") {
  for_every_case(kTrainableAttentionSeed + 1, [](const TrainableAttentionConfig& c, const Inputs& in) {
    for (Eigen::Index head = 0; head < c.heads; ++head) {
      auto md = build<double>(c);
      const Mat<double> out_d = run_forward(*md, head, in.q, in.k, in.v);
      const auto ref_d = library_reference<double>(c.method, *md, head, in);
      if (!ref_d) continue;
      const double err_d = (out_d - ref_d->out).cwiseAbs().maxCoeff();
      INFO("head " << head << " double: |ours - library| = " << err_d << ", bound " << ref_d->bound);
      ATTNLAB_CHECK_RATIO_LE(err_d / ref_d->bound, kForwardRatioLimit, "double forward against the library's kernel");
      auto mf = build<float>(c);
      const Mat<float> out_f = run_forward<float>(*mf, head, in.q.cast<float>(), in.k.cast<float>(), in.v.cast<float>());
      const auto ref_f = library_reference<float>(c.method, *mf, head, in);
      const double err_f = (out_f.cast<double>() - ref_f->out).cwiseAbs().maxCoeff();
      INFO("head " << head << " float: |ours - library| = " << err_f << ", bound " << ref_f->bound);
      ATTNLAB_CHECK_RATIO_LE(err_f / ref_f->bound, kForwardRatioLimit, "float forward against the library's kernel");
    }
  });
}

// The library's own forward for the methods whose trainable forward calls it (exact, the two linear forms,
// the two random-feature forms), on the same numbers and draws; std::nullopt for the others (linformer,
// nystrom and symmetric keep their reference kernels as the papers write them, in another layout from the
// trainable forward's, and are checked within bounds above).
template <typename T>
std::optional<Mat<T>> shared_forward(const std::string& method, TrainableAttention<T>& m, Eigen::Index head,
                                     const Mat<T>& q, const Mat<T>& k, const Mat<T>& v) {
  if (method == "exact") return softmax_attention(q, k, v);
  if (method == "linear-elu") return elu_linear_attention(q, k, v);
  if (method == "linear-shen") return efficient_attention(q, k, v);
  if (method != "random-fourier" && method != "favor") return std::nullopt;
  const Mat<T>& w = *m.buffers().at(static_cast<std::size_t>(head));  // the head's draw
  if (method == "random-fourier") return random_fourier_attention(q, k, v, w, std::sqrt(static_cast<T>(q.cols())));
  return favor_attention(q, k, v, w);
}

TEST_CASE("trainable attention: forward is the library's forward bit for bit, where the method has one") {
  for_every_case(kTrainableAttentionSeed + 7, [](const TrainableAttentionConfig& c, const Inputs& in) {
    for (Eigen::Index head = 0; head < c.heads; ++head) {
      INFO("head " << head);
      auto md = build<double>(c);
      const auto lib_d = shared_forward<double>(c.method, *md, head, in.q, in.k, in.v);
      if (!lib_d) return;
      CHECK(run_forward(*md, head, in.q, in.k, in.v) == *lib_d);
      auto mf = build<float>(c);
      const Mat<float> q = in.q.cast<float>(), k = in.k.cast<float>(), v = in.v.cast<float>();
      CHECK(run_forward(*mf, head, q, k, v) == *shared_forward<float>(c.method, *mf, head, q, k, v));
    }
  });
}

TEST_CASE("trainable attention: backward equals central finite differences in double, for every input and parameter") {
  for_every_case(kTrainableAttentionSeed + 2, [](const TrainableAttentionConfig& c, const Inputs& given) {
    const Inputs in = away_from_kinks(c, given);
    auto m = build<double>(c);
    const Eigen::Index head = c.heads - 1;  // the last head: per-head draws must be the ones forward used
    const Grads<double> g = run_backward(*m, head, in.q, in.k, in.v, in.d_out);
    const FdResult fd = finite_differences(*m, head, in, fd_kappa(c, *m, head, in));
    const FdRatios r = fd_ratios(g, fd);
    INFO(describe_ratios(r) << " tiny " << fd.tiny);
    ATTNLAB_CHECK_RATIO_LE(r.max(), kAttentionFdTolerance, "the largest gradient ratio against finite differences");
    REQUIRE(g.params.size() == m->parameters().size());
  });
}

TEST_CASE("trainable attention: the finite-difference check fails on a wrong gradient") {
  // Every method: one entry of each gradient moved by 100 tolerances of the ratio's denominator
  // must push that ratio above the tolerance. And a real mistake: symmetric attention's backward
  // handed to exact attention's forward differs from its finite differences (n >= 2).
  for_every_case(kTrainableAttentionSeed + 3, [](const TrainableAttentionConfig& c, const Inputs& given) {
    const Inputs in = away_from_kinks(c, given);
    auto m = build<double>(c);
    const Grads<double> g = run_backward(*m, 0, in.q, in.k, in.v, in.d_out);
    const FdResult fd = finite_differences(*m, 0, in, fd_kappa(c, *m, 0, in));
    auto bumped_ratio = [&](const Mat<double>& x, const Mat<double>& x_fd) {
      Mat<double> y = x;
      const Eigen::Index i = y.rows() / 2, j = y.cols() - 1;
      y(i, j) += 100 * kAttentionFdTolerance * (y.cwiseAbs().maxCoeff() + fd.tiny);
      return scaled_ratio(y, x_fd, fd.tiny);
    };
    ATTNLAB_CHECK_RATIO_GT(bumped_ratio(g.q, fd.fd.q), kAttentionFdTolerance, "bumped dq");
    ATTNLAB_CHECK_RATIO_GT(bumped_ratio(g.k, fd.fd.k), kAttentionFdTolerance, "bumped dk");
    ATTNLAB_CHECK_RATIO_GT(bumped_ratio(g.v, fd.fd.v), kAttentionFdTolerance, "bumped dv");
    for (std::size_t p = 0; p < g.params.size(); ++p)
      ATTNLAB_CHECK_RATIO_GT(bumped_ratio(g.params[p], fd.fd.params[p]), kAttentionFdTolerance, "bumped param" + std::to_string(p));
  });
  Rng rng(kTrainableAttentionSeed + 4);
  for (Eigen::Index n : {Eigen::Index(2), Eigen::Index(7)}) {
    const Inputs in = make_inputs(n, 3, 2, rng);
    auto exact = build<double>(config_of("exact", n, 3, 2, 1));
    auto symmetric = build<double>(config_of("symmetric", n, 3, 2, 1));
    const FdResult fd = finite_differences(*exact, 0, in, 1.0);
    Mat<double> out;
    std::unique_ptr<AttentionTape> tape;
    symmetric->forward(0, in.q, in.k, in.v, out, &tape);
    Grads<double> wrong;
    symmetric->backward(0, *tape, in.d_out, wrong.q, wrong.k, wrong.v, nullptr);
    const double r = std::max(scaled_ratio(wrong.q, fd.fd.q, fd.tiny), scaled_ratio(wrong.k, fd.fd.k, fd.tiny));
    INFO("n=" << n);
    ATTNLAB_CHECK_RATIO_GT(r, kAttentionFdTolerance, "symmetric attention's backward against exact attention's finite differences");
  }
}

TEST_CASE("trainable attention: float forward and backward are close to double") {
  // Float's eps times the longest chain of roundings (n + d_k + d_v + the method's inner width)
  // bounds the relative error of each pass, times the method's conditioning (1 for positive
  // weights); 30 (LAPACK's threshold) covers the few passes chained and the cancellation in the
  // softmax backward's dP - rowsum(dP o P).
  for_every_case(kTrainableAttentionSeed + 5, [](const TrainableAttentionConfig& c, const Inputs& in) {
    auto md = build<double>(c);
    auto mf = build<float>(c);
    const Eigen::Index head = c.heads - 1;
    Mat<double> out_d;
    Mat<float> out_f;
    const Grads<double> gd = run_backward(*md, head, in.q, in.k, in.v, in.d_out, &out_d);
    const Grads<float> gf = run_backward<float>(*mf, head, in.q.cast<float>(), in.k.cast<float>(), in.v.cast<float>(),
                                                in.d_out.cast<float>(), &out_f);
    Mat<double> unused;
    std::unique_ptr<AttentionTape> tape_d;
    md->forward(head, in.q, in.k, in.v, unused, &tape_d);
    const double kappa = conditioning(c, *tape_d);
    const double tol = kForwardRatioLimit * chain_length(c, *md) * kappa * eps<float>();
    auto ratio = [](const Mat<double>& d, const Mat<double>& f, double scale) {
      return (d - f).cwiseAbs().maxCoeff() / (d.cwiseAbs().maxCoeff() + scale);
    };
    // Absolute floors: the output's natural scale is max|v|, a gradient's max|d_out| times it.
    const double vmax = in.v.cwiseAbs().maxCoeff(), gmax = in.d_out.cwiseAbs().maxCoeff();
    const double r_out = ratio(out_d, out_f.cast<double>(), vmax);
    const double r_q = ratio(gd.q, gf.q.cast<double>(), gmax * vmax);
    const double r_k = ratio(gd.k, gf.k.cast<double>(), gmax * vmax);
    const double r_v = ratio(gd.v, gf.v.cast<double>(), gmax);
    INFO("tol " << tol << " (conditioning " << kappa << ") out " << r_out << " dq " << r_q << " dk " << r_k << " dv " << r_v);
    ATTNLAB_CHECK_RATIO_LE(r_out, tol, "float output against double");
    ATTNLAB_CHECK_RATIO_LE(r_q, tol, "float dq against double");
    ATTNLAB_CHECK_RATIO_LE(r_k, tol, "float dk against double");
    ATTNLAB_CHECK_RATIO_LE(r_v, tol, "float dv against double");
    for (std::size_t p = 0; p < gd.params.size(); ++p) {
      const double r_p = ratio(gd.params[p], gf.params[p].cast<double>(), gmax * vmax);
      ATTNLAB_CHECK_RATIO_LE(r_p, tol, "float param" + std::to_string(p) + " gradient against double");
    }
  });
}

TEST_CASE("trainable attention: results are the same on every call, tapes are reused, parameter gradients accumulate") {
  Rng rng(kTrainableAttentionSeed + 6);
  const Inputs in = make_inputs(9, 4, 3, rng);
  for (const std::string& name : trainable_attention_names()) {
    INFO(name);
    auto m = build<float>(config_of(name, 9, 4, 3, 7));
    const Mat<float> q = in.q.cast<float>(), k = in.k.cast<float>(), v = in.v.cast<float>(),
                     d_out = in.d_out.cast<float>();
    Mat<float> out1, out2;
    const Grads<float> g1 = run_backward(*m, 1, q, k, v, d_out, &out1);
    const Grads<float> g2 = run_backward(*m, 1, q, k, v, d_out, &out2);
    CHECK(out1 == out2);
    CHECK(g1.q == g2.q);
    CHECK(g1.k == g2.k);
    CHECK(g1.v == g2.v);
    // backward ADDS into param_grads: twice on the same tape gives exactly twice (x + x is exact).
    std::unique_ptr<AttentionTape> tape;
    Mat<float> out;
    m->forward(1, q, k, v, out, &tape);
    std::vector<Mat<float>> acc;
    for (Mat<float>* p : m->parameters()) acc.push_back(Mat<float>::Zero(p->rows(), p->cols()));
    Mat<float> dq, dk, dv;
    m->backward(1, *tape, d_out, dq, dk, dv, &acc);
    m->backward(1, *tape, d_out, dq, dk, dv, &acc);
    for (std::size_t p = 0; p < acc.size(); ++p) CHECK(acc[p] == (2 * g1.params[p]).eval());
    // A tape is reused by the next forward (its storage kept): after a forward on other inputs,
    // and one by another method, the same forward into the same tape gives the same backward.
    Rng other_rng(kTrainableAttentionSeed + 9);
    const Inputs other = make_inputs(9, 4, 3, other_rng);
    m->forward(0, other.q.cast<float>(), other.k.cast<float>(), other.v.cast<float>(), out, &tape);
    m->forward(1, q, k, v, out, &tape);
    Grads<float> g3;
    for (Mat<float>* p : m->parameters()) g3.params.push_back(Mat<float>::Zero(p->rows(), p->cols()));
    m->backward(1, *tape, d_out, g3.q, g3.k, g3.v, &g3.params);
    CHECK(out == out1);
    CHECK(g3.q == g1.q);
    CHECK(g3.k == g1.k);
    CHECK(g3.v == g1.v);
    for (std::size_t p = 0; p < g3.params.size(); ++p) CHECK(g3.params[p] == g1.params[p]);
    const std::string another = name == "exact" ? "symmetric" : "exact";
    build<float>(config_of(another, 9, 4, 3, 7))->forward(0, q, k, v, out, &tape);
    m->forward(1, q, k, v, out, &tape);
    m->backward(1, *tape, d_out, g3.q, g3.k, g3.v, &g3.params);
    CHECK(out == out1);
    CHECK(g3.q == g1.q);
    CHECK(g3.k == g1.k);
  }
}

namespace {

template <typename T>
bool all_finite(const Grads<T>& g, const Mat<T>& out) {
  bool ok = out.allFinite() && g.q.allFinite() && g.k.allFinite() && g.v.allFinite();
  for (const auto& p : g.params) ok = ok && p.allFinite();
  return ok;
}

}  // namespace

TEST_CASE("trainable attention: logits of 1e4 keep forward and backward finite (the stability tricks)") {
  // q and k scaled by 100: logits q.k / sqrt(d_k) of order 1e4, where exp() without the maximum
  // subtractions overflows in float and double. random-fourier is left out by its definition: its
  // denominator is a signed estimate that can be 0 (random_features.hpp: no protection).
  Rng rng(kTrainableAttentionSeed + 7);
  for (Eigen::Index n : {Eigen::Index(2), Eigen::Index(20)}) {
    Inputs in = make_inputs(n, 5, 3, rng);
    in.q *= 100;
    in.k *= 100;
    for (const std::string& name : trainable_attention_names()) {
      if (name == "random-fourier") continue;
      INFO(name << " n=" << n << " seed " << kTrainableAttentionSeed + 7);
      auto md = build<double>(config_of(name, n, 5, 3, 3));
      auto mf = build<float>(config_of(name, n, 5, 3, 3));
      Mat<double> out_d;
      Mat<float> out_f;
      const Grads<double> gd = run_backward(*md, 1, in.q, in.k, in.v, in.d_out, &out_d);
      const Grads<float> gf = run_backward<float>(*mf, 1, in.q.cast<float>(), in.k.cast<float>(), in.v.cast<float>(),
                                                  in.d_out.cast<float>(), &out_f);
      CHECK(all_finite(gd, out_d));
      CHECK(all_finite(gf, out_f));
    }
  }
}

TEST_CASE("linear-elu: the rescaling of all-negative rows is differentiated correctly (entries near -800)") {
  // exp(-800) underflows to 0 in double: without the rescaling phi(Q) and phi(K) would vanish and
  // the output be 0 / 0. The forward must equal the library's (which rescales alike) and the
  // backward its finite differences, with the same step and tolerance as everywhere above.
  Rng rng(kTrainableAttentionSeed + 8);
  for (Eigen::Index n : {Eigen::Index(1), Eigen::Index(3), Eigen::Index(7)}) {
    Inputs in = make_inputs(n, 2, 2, rng);
    in.q.array() -= 800;
    in.k.array() -= 800;
    const auto c = config_of("linear-elu", n, 2, 2, 1);
    auto m = build<double>(c);
    const Grads<double> g = run_backward(*m, 0, in.q, in.k, in.v, in.d_out);
    const Mat<double> out = run_forward(*m, 0, in.q, in.k, in.v);
    const Mat<double> ref = elu_linear_attention(in.q, in.k, in.v);
    INFO("n=" << n << " seed " << kTrainableAttentionSeed + 8 << " |out - library| " << (out - ref).cwiseAbs().maxCoeff());
    CHECK(out.allFinite());
    // The bound of library_reference() with the exponents' spread in place of 2 max|x| (the
    // rescaled exponents are x - max, not x).
    const double spread = std::max(in.q.maxCoeff() - in.q.minCoeff(), in.k.maxCoeff() - in.k.minCoeff());
    const double bound = 4 * (spread + 2 + static_cast<double>(n) + 4) * eps<double>() *
                         std::max(1.0, in.v.cwiseAbs().maxCoeff());
    ATTNLAB_CHECK_RATIO_LE((out - ref).cwiseAbs().maxCoeff() / bound, kForwardRatioLimit, "forward against the library's kernel");
    const FdResult fd = finite_differences(*m, 0, in, 1.0);
    const FdRatios r = fd_ratios(g, fd);
    INFO(describe_ratios(r) << " tiny " << fd.tiny);
    ATTNLAB_CHECK_RATIO_LE(r.max(), kAttentionFdTolerance, "the largest gradient ratio against finite differences");
  }
}
