// L3's random families beside a trained model (family_references.hpp).
#include "attnlab/lab/family_references.hpp"

#include <algorithm>

#include "attnlab/core/rng.hpp"
#include "attnlab/lab/attention_inputs.hpp"
#include "attnlab/lab/parallel_trials.hpp"
#include "attnlab/model/analysis/attention_spectrum.hpp"

namespace attnlab {

std::vector<std::vector<SampleSpectrum>> family_spectra(std::size_t first, std::size_t last, std::size_t draws, Eigen::Index n,
                                                        Eigen::Index d_k, std::uint64_t seed, double fraction, double high_fraction) {
  const auto& families = attention_families();
  std::vector<SampleSpectrum> all((last - first) * draws);
  parallel_trials(all.size(), [&](std::size_t d) {
    const std::size_t i = first * draws + d;  // the draw's index among all the families' draws: its seed
    Rng rng(derive_seed(seed, 2000000 + i));
    const AttentionInputs in = make_attention_inputs(families[i / draws], n, d_k, rng);
    all[d] = sample_spectrum(softmax_attention_matrix(in.q, in.k), fraction, high_fraction);
  });
  std::vector<std::vector<SampleSpectrum>> out;
  for (std::size_t f = 0; f < last - first; ++f)
    out.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(f * draws), all.begin() + static_cast<std::ptrdiff_t>((f + 1) * draws));
  return out;
}

std::vector<std::vector<FamilyError>> family_swap_errors(const std::vector<SwapConfig>& configs, std::size_t first,
                                                         std::size_t last, std::size_t draws, Eigen::Index n, Eigen::Index d_k,
                                                         std::uint64_t seed) {
  const auto& families = attention_families();
  const std::size_t per_config = families.size() * draws;
  std::vector<double> error((last - first) * per_config);
  parallel_trials(error.size(), [&](std::size_t d) {
    const std::size_t i = first * per_config + d, c = i / per_config, f = (i / draws) % families.size();
    Rng rng(derive_seed(seed, 3000000 + i));
    const AttentionInputs in = make_attention_inputs(families[f], n, d_k, rng);
    error[d] = swap_error_on(configs[c], in.q, in.k, in.v, derive_seed(seed, 4000000 + i));
  });
  std::vector<std::vector<FamilyError>> out(last - first);
  for (std::size_t c = 0; c < last - first; ++c)
    for (std::size_t f = 0; f < families.size(); ++f) {
      FamilyError e{families[f], 0, 0};
      for (std::size_t t = 0; t < draws; ++t) {
        const double v = error[(c * families.size() + f) * draws + t];
        e.mean += v / static_cast<double>(draws);
        e.worst = std::max(e.worst, v);
      }
      out[c].push_back(e);
    }
  return out;
}

}  // namespace attnlab
