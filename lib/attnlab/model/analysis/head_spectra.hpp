// The spectrum of every head's attention matrix P = softmax(Q K^T / sqrt(d_k)) of a model (the ViT, the recall
// model) on one item (an image, a sequence) (claim L5): the ranks that hold a share of ||P||_F^2, of P and of P with
// its mean row removed.
#pragma once

#include <cstdint>
#include <vector>

#include "attnlab/model/recall_model.hpp"
#include "attnlab/model/trainer.hpp"
#include "attnlab/model/vit.hpp"

namespace attnlab {

// One P's spectrum.
struct SampleSpectrum {
  Eigen::Index rank = 0, rank_high = 0;  // the ranks holding `fraction` and `high_fraction` of ||P||_F^2
  // The rank holding `fraction` of ||P - 1 pbar^T||_F^2 (pbar the mean row), 0 when every row is the same.
  // Near-uniform attention puts almost all of ||P||_F^2 into the one direction of the mean row (1 1^T / n
  // has rank 1), so P's rank alone cannot tell a head that attends everywhere alike from one whose
  // variation is low rank; the centred P can.
  Eigen::Index rank_centred = 0;
  double top1 = 0;                  // sigma_1^2 / ||P||_F^2
  Eigen::VectorXd cumulative;       // cumulative_energy of P's singular values
};

// The spectrum of p (attention_singular_values, checked against ||p||_F^2).
SampleSpectrum sample_spectrum(const Mat<double>& p, double fraction, double high_fraction);

// P of the heads [first, last) of `model` (head j is layer j / H, head j mod H) on test item `item`, by one
// forward pass in the model's precision, P recomputed in double from the head's q and k. With check_output
// (the model's method is exact softmax) P V must reproduce the model's own head output to within
// `output_tolerance` relative (Frobenius): std::runtime_error naming the layer and head otherwise.
// Model: ViT<float> or RecallModel<float>.
template <typename Model>
std::vector<SampleSpectrum> item_head_spectra(const Model& model, const typename Model::Data& test, std::int64_t item,
                                              std::size_t first, std::size_t last, double fraction, double high_fraction,
                                              bool check_output, double output_tolerance);

}  // namespace attnlab
