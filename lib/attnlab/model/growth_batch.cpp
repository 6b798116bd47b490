// The growth batch from the score probe.
#include "attnlab/model/growth_batch.hpp"

#include <stdexcept>

#include "attnlab/model/analysis/score_probe.hpp"
#include "attnlab/model/vit_copy.hpp"

namespace attnlab {

template <typename T>
GrowthBatch collect_growth_batch(ViT<T>& model, const ImageSet& data, std::span<const std::int64_t> images) {
  if (images.empty()) throw std::invalid_argument("collect_growth_batch: no images");
  const auto copy = copy_vit<double>(model);
  ScoreProbe<double> probe(*copy);
  const ViTConfig& c = model.config();
  const Eigen::Index n = c.tokens(), D = c.D, L = c.layers, H = c.heads, count = static_cast<Eigen::Index>(images.size());
  GrowthBatch batch;
  batch.n = n;
  batch.x_aug.assign(static_cast<std::size_t>(L), Mat<double>(count * n, D + 1));
  batch.g.assign(static_cast<std::size_t>(L), std::vector<std::vector<Mat<double>>>(static_cast<std::size_t>(H)));
  ImageScores<double> out;
  for (Eigen::Index b = 0; b < count; ++b) {
    batch.loss += probe.run(data, images[static_cast<std::size_t>(b)], 1.0 / static_cast<double>(count), out);
    for (Eigen::Index l = 0; l < L; ++l) {
      const auto lu = static_cast<std::size_t>(l);
      batch.x_aug[lu].block(b * n, 0, n, D) = out.z[lu];
      batch.x_aug[lu].block(b * n, D, n, 1).setOnes();
      for (Eigen::Index h = 0; h < H; ++h) batch.g[lu][static_cast<std::size_t>(h)].push_back(out.g[lu][static_cast<std::size_t>(h)]);
    }
  }
  return batch;
}

template GrowthBatch collect_growth_batch<float>(ViT<float>&, const ImageSet&, std::span<const std::int64_t>);
template GrowthBatch collect_growth_batch<double>(ViT<double>&, const ImageSet&, std::span<const std::int64_t>);

}  // namespace attnlab
