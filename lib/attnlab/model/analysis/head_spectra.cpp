// The spectra of a model's heads on one image (head_spectra.hpp).
#include "attnlab/model/analysis/head_spectra.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "attnlab/model/analysis/attention_spectrum.hpp"

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

template <typename Model>
std::vector<SampleSpectrum> item_head_spectra(const Model& model, const typename Model::Data& test, std::int64_t item,
                                              std::size_t first, std::size_t last, double fraction, double high_fraction,
                                              bool check_output, double output_tolerance) {
  const auto& c = model.config();
  const Eigen::Index H = c.heads, n = c.tokens(), dk = c.key_head_width(), dv = c.head_width();
  std::vector<SampleSpectrum> out;
  if (first >= last) return out;
  typename Model::Activations act;
  const std::int64_t one[] = {item};
  model.set_inputs(act, test, one);
  model.forward_backward(act, {}, 1.0, nullptr);
  for (std::size_t j = first; j < last; ++j) {
    const Eigen::Index l = static_cast<Eigen::Index>(j) / H, h = static_cast<Eigen::Index>(j) % H;
    const auto& t = act.blocks[static_cast<std::size_t>(l)].mha;
    const Mat<double> q = t.q.block(0, h * dk, n, dk).template cast<double>(), k = t.k.block(0, h * dk, n, dk).template cast<double>();
    const Mat<double> p = softmax_attention_matrix(q, k);
    if (check_output) {
      const Mat<double> o = t.o.block(0, h * dv, n, dv).template cast<double>();
      const double diff = (p * t.v.block(0, h * dv, n, dv).template cast<double>() - o).norm() / o.norm();
      if (!(diff <= output_tolerance))
        throw std::runtime_error(
            fmt::format("layer {} head {}: P V differs from the model's head output by {:.3g} (relative)", l, h, diff));
    }
    out.push_back(sample_spectrum(p, fraction, high_fraction));
  }
  return out;
}

template std::vector<SampleSpectrum> item_head_spectra<ViT<float>>(const ViT<float>&, const ImageSet&, std::int64_t, std::size_t,
                                                                   std::size_t, double, double, bool, double);
template std::vector<SampleSpectrum> item_head_spectra<RecallModel<float>>(const RecallModel<float>&, const RecallSet&, std::int64_t,
                                                                           std::size_t, std::size_t, double, double, bool, double);

}  // namespace attnlab
