// An approximation alone on one head's inputs (attention_swap.hpp).
#include "attnlab/model/analysis/attention_swap.hpp"

#include "attnlab/model/analysis/attention_spectrum.hpp"

namespace attnlab {

double swap_error_on(const SwapConfig& swap, const Mat<double>& q, const Mat<double>& k, const Mat<double>& v, std::uint64_t seed) {
  TrainableAttentionConfig a = swap.attention();
  a.n = q.rows();
  a.d_k = q.cols();
  a.d_v = v.cols();
  a.heads = 1;
  a.seed = seed;
  const auto m = make_trainable_attention<double>(a);
  if (swap.method == kLinformerSegmentMeans) set_segment_mean_projections(*m);
  Mat<double> out;
  m->forward(0, q, k, v, out, nullptr);
  const Mat<double> ref = softmax_attention_matrix(q, k) * v;
  return (out - ref).norm() / ref.norm();
}

}  // namespace attnlab
