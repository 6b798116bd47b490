// Swapped methods on a trained model's own q, k, v (swap_errors.hpp).
#include "attnlab/model/analysis/swap_errors.hpp"

#include <algorithm>

namespace attnlab {

template <typename Model>
std::vector<LayerSwapError> item_swap_errors(const Model& trained, const std::vector<std::unique_ptr<Model>>& swapped,
                                             const typename Model::Data& test, std::int64_t item) {
  const auto& c = trained.config();
  const Eigen::Index L = c.layers, H = c.heads, n = c.tokens(), dk = c.key_head_width(), dv = c.head_width();
  typename Model::Activations act;
  const std::int64_t one[] = {item};
  trained.set_inputs(act, test, one);
  trained.forward_backward(act, {}, 1.0, nullptr);
  std::vector<LayerSwapError> out;
  Mat<float> approx;
  for (const auto& model : swapped)
    for (Eigen::Index l = 0; l < L; ++l) {
      const auto& t = act.blocks[static_cast<std::size_t>(l)].mha;
      const auto& method = model->attention(l);
      LayerSwapError e;
      double sum = 0;
      for (Eigen::Index h = 0; h < H; ++h) {
        const Mat<float> q = t.q.block(0, h * dk, n, dk), k = t.k.block(0, h * dk, n, dk), v = t.v.block(0, h * dv, n, dv);
        method.forward(h, q, k, v, approx, nullptr);
        const Mat<double> ref = t.o.block(0, h * dv, n, dv).template cast<double>();
        const double err = (approx.template cast<double>() - ref).norm() / ref.norm();
        sum += err;
        e.max = std::max(e.max, err);
      }
      e.mean = sum / static_cast<double>(H);
      out.push_back(e);
    }
  return out;
}

template std::vector<LayerSwapError> item_swap_errors<ViT<float>>(const ViT<float>&, const std::vector<std::unique_ptr<ViT<float>>>&,
                                                                  const ImageSet&, std::int64_t);
template std::vector<LayerSwapError> item_swap_errors<RecallModel<float>>(const RecallModel<float>&,
                                                                          const std::vector<std::unique_ptr<RecallModel<float>>>&,
                                                                          const RecallSet&, std::int64_t);

}  // namespace attnlab
