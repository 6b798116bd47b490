// The attention methods in one table (see registry.hpp).
#include "attnlab/attention/registry.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "attnlab/attention/fused_attention.hpp"
#include "attnlab/attention/linear_attention.hpp"
#include "attnlab/attention/softmax_attention.hpp"
#include "attnlab/attention/streaming_attention.hpp"

namespace attnlab {

namespace {

using Params = MethodParams;
using Draws = MethodDraws;

double temperature_of(const Params& p, Eigen::Index d) {
  return p.temperature > 0 ? p.temperature : std::sqrt(static_cast<double>(d));
}

const LinformerProjections<double>& projections_of(const Draws& draws) {
  if (!draws.projections) throw std::invalid_argument("linformer needs its projections E and F (MethodDraws::projections)");
  return *draws.projections;
}

const RandomFeatureDraw& features_of(const Draws& draws, const char* method) {
  if (!draws.features) throw std::invalid_argument(std::string(method) + " needs its features omega (MethodDraws::features)");
  return *draws.features;
}

// The kernels, one function template per (method, impl); the table takes their float and double forms.
template <typename T>
HeadStack<T> exact_reference(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v, const Params&, const Draws&) {
  return softmax_attention(q, k, v);
}
template <typename T>
HeadStack<T> exact_fast(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v, const Params&, const Draws&) {
  return fused_attention(q, k, v);
}
template <typename T>
HeadStack<T> streaming_reference(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v, const Params& p,
                                 const Draws&) {
  return streaming_attention(q, k, v, p.key_block);
}
template <typename T>
HeadStack<T> streaming_fast(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v, const Params& p, const Draws&) {
  return fused_attention(q, k, v, p.key_block);
}
template <typename T>
HeadStack<T> shen_reference(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v, const Params&, const Draws&) {
  return efficient_attention(q, k, v);
}
template <typename T>
HeadStack<T> shen_fast(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v, const Params&, const Draws&) {
  return fast_efficient_attention(q, k, v);
}
template <typename T>
HeadStack<T> elu_reference(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v, const Params&, const Draws&) {
  return elu_linear_attention(q, k, v);
}
template <typename T>
HeadStack<T> elu_fast(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v, const Params&, const Draws&) {
  return fast_elu_linear_attention(q, k, v);
}
template <typename T>
HeadStack<T> linformer_reference(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v, const Params&,
                                 const Draws& draws) {
  return linformer_attention(q, k, v, projections_of(draws).cast<T>());
}
template <typename T>
HeadStack<T> linformer_fast(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v, const Params&,
                            const Draws& draws) {
  return fast_linformer_attention(q, k, v, projections_of(draws).cast<T>());
}
template <typename T>
HeadStack<T> fourier_reference(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v, const Params& p,
                               const Draws& draws) {
  return random_fourier_attention(q, k, v, features_of(draws, "random-fourier"), temperature_of(p, q.d()));
}
template <typename T>
HeadStack<T> favor_reference(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v, const Params&,
                             const Draws& draws) {
  return favor_attention(q, k, v, features_of(draws, "favor"));
}
template <typename T>
HeadStack<T> nystrom_reference(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v, const Params& p,
                               const Draws&) {
  return nystrom_attention(q, k, v, p.nystrom);
}
template <typename T>
HeadStack<T> nystrom_fast(const HeadStack<T>& q, const HeadStack<T>& k, const HeadStack<T>& v, const Params& p, const Draws&) {
  return fast_nystrom_attention(q, k, v, p.nystrom.landmarks);
}

Draws no_draws(const Params&, Eigen::Index, Eigen::Index, Rng&) { return {}; }

Draws linformer_draws(const Params& p, Eigen::Index n, Eigen::Index, Rng& rng) {
  if (p.segment_mean_projection) return {segment_mean_projections(n, p.projected), {}};
  return {gaussian_projections(n, p.projected, p.share_kv ? ProjectionSharing::shared : ProjectionSharing::separate, rng), {}};
}

Draws fourier_draws(const Params& p, Eigen::Index, Eigen::Index d, Rng& rng) {
  return {{}, draw_fourier_features(d, p.features, 1 / std::sqrt(temperature_of(p, d)), rng)};
}

Draws favor_draws(const Params& p, Eigen::Index, Eigen::Index d, Rng& rng) {
  return {{}, draw_favor_features(d, p.features, !p.iid, rng)};
}

// The D x d directions omega of the random-feature methods, in double and cast to the kernel's scalars.
double feature_draw_bytes(const Params& p, long long, long long d, std::size_t s) {
  return static_cast<double>(p.features) * static_cast<double>(d) * static_cast<double>(sizeof(double) + s);
}

std::vector<AttentionMethod> make_methods() {
  std::vector<AttentionMethod> all;
  all.push_back({"exact", "softmax(Q K^T / sqrt(d)) V, forming the n_q x n_k matrix", {}, false, no_draws,
                 exact_reference<float>, exact_reference<double>, exact_fast<float>, exact_fast<double>,
                 [](const Params&, long long n, long long d, std::size_t s) { return softmax_attention_cost(n, d, s); }});
  all.push_back({"streaming", "the same, --block keys at a time with a running max and sum (online softmax)", {"block"},
                 false, no_draws, streaming_reference<float>, streaming_reference<double>, streaming_fast<float>,
                 streaming_fast<double>, [](const Params& p, long long n, long long d, std::size_t s) {
                   return streaming_attention_cost(n, d, p.key_block, s);
                 }});
  all.push_back({"linear-shen", "Shen et al.'s efficient attention softmax_row(Q) (softmax_col(K)^T V); no scale", {}, false,
                 no_draws, shen_reference<float>, shen_reference<double>, shen_fast<float>, shen_fast<double>,
                 [](const Params&, long long n, long long d, std::size_t s) { return efficient_attention_cost(n, d, s); }});
  all.push_back({"linear-elu", "Katharopoulos et al.'s linear attention with phi = elu + 1; no scale", {}, false, no_draws,
                 elu_reference<float>, elu_reference<double>, elu_fast<float>, elu_fast<double>,
                 [](const Params&, long long n, long long d, std::size_t s) { return elu_linear_attention_cost(n, d, s); }});
  all.push_back({"linformer", "softmax(Q (E K)^T / sqrt(d)) (F V), E and F --proj x n; needs n_q = n_k",
                 {"proj", "projection", "share-kv"}, true, linformer_draws, linformer_reference<float>,
                 linformer_reference<double>, linformer_fast<float>, linformer_fast<double>,
                 [](const Params& p, long long n, long long d, std::size_t s) {
                   return linformer_attention_cost(n, d, std::min<long long>(p.projected, n), s);
                 },
                 // E and F (one matrix when shared), k x n each, in double and cast to the kernel's scalars.
                 [](const Params& p, long long n, long long, std::size_t s) {
                   return (p.share_kv ? 1.0 : 2.0) * static_cast<double>(p.projected) * static_cast<double>(n) *
                          static_cast<double>(sizeof(double) + s);
                 }});
  all.push_back({"random-fourier", "the UCU report's random Fourier features, D = --features, w_r ~ N(0, I / tau)",
                 {"features", "temperature"}, true, fourier_draws, fourier_reference<float>, fourier_reference<double>,
                 nullptr, nullptr, [](const Params& p, long long n, long long d, std::size_t s) {
                   return random_fourier_attention_cost(n, d, p.features, s);
                 },
                 feature_draw_bytes});
  all.push_back({"favor", "Performer's FAVOR+ positive features, D = --features, w_r ~ N(0, I)", {"features", "iid"}, true,
                 favor_draws, favor_reference<float>, favor_reference<double>, nullptr, nullptr,
                 [](const Params& p, long long n, long long d, std::size_t s) {
                   return favor_attention_cost(n, d, p.features, s);
                 },
                 feature_draw_bytes});
  all.push_back({"nystrom", "Nystromformer: --landmarks segment means, the --pinv pseudoinverse (nothing random)",
                 {"landmarks", "pinv", "pinv-iterations", "pinv-init", "rcond"}, false, no_draws, nystrom_reference<float>,
                 nystrom_reference<double>, nystrom_fast<float>, nystrom_fast<double>,
                 [](const Params& p, long long n, long long d, std::size_t s) {
                   const int iterations = p.nystrom.pinv == PinvMethod::svd ? -1 : p.nystrom.iterations;
                   return nystrom_attention_cost(n, d, std::min<long long>(p.nystrom.landmarks, n), iterations, s);
                 }});
  return all;
}

}  // namespace

std::string to_string(Impl impl) { return impl == Impl::fast ? "fast" : "reference"; }

const std::vector<AttentionMethod>& attention_methods() {
  static const std::vector<AttentionMethod> all = make_methods();
  return all;
}

std::vector<std::string> attention_method_names() {
  std::vector<std::string> names;
  for (const AttentionMethod& m : attention_methods()) names.push_back(m.name);
  return names;
}

std::string attention_method_list() {
  std::string list;
  for (const AttentionMethod& m : attention_methods()) list += (list.empty() ? "" : ", ") + m.name;
  return list;
}

const AttentionMethod& attention_method(const std::string& name) {
  for (const AttentionMethod& m : attention_methods())
    if (m.name == name) return m;
  throw std::invalid_argument("unknown attention method '" + name + "' (valid: " + attention_method_list() + ")");
}

bool fast_kernel_applies(const AttentionMethod& method, const MethodParams& params) {
  if (!method.has_fast()) return false;
  if (method.name != "nystrom") return true;
  const NystromOptions& o = params.nystrom;
  return o.pinv == PinvMethod::iterative && o.iterations == kNystromformerPinvIterations && o.init == PinvInit::per_matrix;
}

template <typename T>
HeadStack<T> run_attention(const AttentionMethod& method, Impl impl, const HeadStack<T>& q, const HeadStack<T>& k,
                           const HeadStack<T>& v, const MethodParams& params, const MethodDraws& draws) {
  AttentionKernel<T> kernel = nullptr;
  if constexpr (std::is_same_v<T, float>)
    kernel = impl == Impl::fast ? method.fast_float : method.reference_float;
  else
    kernel = impl == Impl::fast ? method.fast_double : method.reference_double;
  if (impl == Impl::fast && !fast_kernel_applies(method, params)) {
    if (!method.has_fast()) throw std::invalid_argument(method.name + " has no fast kernel (use the reference)");
    throw std::invalid_argument(method.name + "'s fast kernel takes the iterative pseudoinverse with " +
                                std::to_string(kNystromformerPinvIterations) + " iterations and the " +
                                to_string(PinvInit::per_matrix) + " initialisation only (use the reference)");
  }
  return kernel(q, k, v, params, draws);
}

bool c_order_kernel_applies(const AttentionMethod& method, Impl impl) {
  return impl == Impl::fast && (method.fast_float == &exact_fast<float> || method.fast_float == &streaming_fast<float>);
}

template <typename T>
void run_attention_c_order(const AttentionMethod& method, Impl impl, const std::vector<T*>& out, const std::vector<const T*>& q,
                           const std::vector<const T*>& k, const std::vector<const T*>& v, Eigen::Index n_q, Eigen::Index n_k,
                           Eigen::Index d, Eigen::Index d_v, const MethodParams& params) {
  if (!c_order_kernel_applies(method, impl))
    throw std::invalid_argument(method.name + " --impl " + to_string(impl) + " has no kernel over C-order heads");
  // exact_fast and streaming_fast's kernel, with their key blocks.
  fused_attention_c_order(out, q, k, v, n_q, n_k, d, d_v, method.fast_float == &exact_fast<float> ? 0 : params.key_block);
}

template void run_attention_c_order(const AttentionMethod&, Impl, const std::vector<float*>&, const std::vector<const float*>&,
                                    const std::vector<const float*>&, const std::vector<const float*>&, Eigen::Index, Eigen::Index,
                                    Eigen::Index, Eigen::Index, const MethodParams&);
template void run_attention_c_order(const AttentionMethod&, Impl, const std::vector<double*>&, const std::vector<const double*>&,
                                    const std::vector<const double*>&, const std::vector<const double*>&, Eigen::Index,
                                    Eigen::Index, Eigen::Index, Eigen::Index, const MethodParams&);
template HeadStack<float> run_attention(const AttentionMethod&, Impl, const HeadStack<float>&, const HeadStack<float>&,
                                        const HeadStack<float>&, const MethodParams&, const MethodDraws&);
template HeadStack<double> run_attention(const AttentionMethod&, Impl, const HeadStack<double>&, const HeadStack<double>&,
                                         const HeadStack<double>&, const MethodParams&, const MethodDraws&);

}  // namespace attnlab
