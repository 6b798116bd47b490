// Swapped methods on a trained model's own q, k, v (swap_errors.hpp).
#include "attnlab/model/analysis/swap_errors.hpp"

#include <algorithm>

namespace attnlab {

std::vector<LayerSwapError> image_swap_errors(const ViT<float>& trained, const std::vector<std::unique_ptr<ViT<float>>>& swapped,
                                              const ImageSet& test, std::int64_t image) {
  const ViTConfig& c = trained.config();
  const Eigen::Index L = c.layers, H = c.heads, n = c.tokens(), dk = c.key_head_width(), dv = c.head_width();
  ViTActivations<float> act;
  const std::int64_t one[] = {image};
  trained.set_inputs(act, test.pixels, test.side, one);
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
        const Mat<double> ref = t.o.block(0, h * dv, n, dv).cast<double>();
        const double err = (approx.cast<double>() - ref).norm() / ref.norm();
        sum += err;
        e.max = std::max(e.max, err);
      }
      e.mean = sum / static_cast<double>(H);
      out.push_back(e);
    }
  return out;
}

}  // namespace attnlab
