// The spectra of a model's heads on one image (head_spectra.hpp).
#include "attnlab/model/analysis/head_spectra.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "attnlab/model/analysis/attention_spectrum.hpp"
#include "attnlab/model/patch_embedding.hpp"

namespace attnlab {

SampleSpectrum sample_spectrum(const Mat<double>& p, double fraction, double high_fraction) {
  const Eigen::VectorXd s = attention_singular_values(p);
  SampleSpectrum out;
  out.cumulative = cumulative_energy(s);
  out.rank = energy_rank(s, fraction);
  out.rank_high = energy_rank(s, high_fraction);
  out.top1 = out.cumulative(0);
  const Mat<double> centred = p.rowwise() - p.colwise().mean();
  const Eigen::VectorXd sc = attention_singular_values(centred);
  out.rank_centred = sc.squaredNorm() > 0 ? energy_rank(sc, fraction) : 0;
  return out;
}

std::vector<SampleSpectrum> image_head_spectra(const ViT<float>& model, const ImageSet& test, std::int64_t image,
                                               std::size_t first, std::size_t last, double fraction, double high_fraction,
                                               bool check_output, double output_tolerance) {
  const ViTConfig& c = model.config();
  const Eigen::Index H = c.heads, n = c.tokens(), dk = c.key_head_width(), dv = c.head_width();
  std::vector<SampleSpectrum> out;
  if (first >= last) return out;
  ViTActivations<float> act;
  const std::int64_t one[] = {image};
  model.set_inputs(act, test.pixels, test.side, one);
  model.forward_backward(act, {}, 1.0, nullptr);
  for (std::size_t j = first; j < last; ++j) {
    const Eigen::Index l = static_cast<Eigen::Index>(j) / H, h = static_cast<Eigen::Index>(j) % H;
    const auto& t = act.blocks[static_cast<std::size_t>(l)].mha;
    const Mat<double> q = t.q.block(0, h * dk, n, dk).cast<double>(), k = t.k.block(0, h * dk, n, dk).cast<double>();
    const Mat<double> p = softmax_attention_matrix(q, k);
    if (check_output) {
      const Mat<double> o = t.o.block(0, h * dv, n, dv).cast<double>();
      const double diff = (p * t.v.block(0, h * dv, n, dv).cast<double>() - o).norm() / o.norm();
      if (!(diff <= output_tolerance))
        throw std::runtime_error(
            fmt::format("layer {} head {}: P V differs from the model's head output by {:.3g} (relative)", l, h, diff));
    }
    out.push_back(sample_spectrum(p, fraction, high_fraction));
  }
  return out;
}

}  // namespace attnlab
