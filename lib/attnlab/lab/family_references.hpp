// L3's random attention families as the reference beside a trained model (lab/attention_inputs.hpp): the
// spectra of their P (claim L5) and the errors of the approximations on them (claim U18), at the trained
// model's n and d_k. Each draw's inputs are seeded by its index in the whole family sweep, so a shard that
// measures families [first, last) gets the numbers the unsharded run gets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attnlab/model/analysis/attention_swap.hpp"
#include "attnlab/model/analysis/head_spectra.hpp"

namespace attnlab {

// [f - first][draw]: the spectrum of P = softmax(Q K^T / sqrt(d_k)) of `draws` draws of attention_families()[f]
// (inputs seeded derive_seed(seed, 2000000 + f draws + t)), in parallel.
std::vector<std::vector<SampleSpectrum>> family_spectra(std::size_t first, std::size_t last, std::size_t draws, Eigen::Index n,
                                                        Eigen::Index d_k, std::uint64_t seed, double fraction, double high_fraction);

// One approximation's errors on every family: the mean and largest over the draws.
struct FamilyError {
  std::string family;
  double mean = 0, worst = 0;
};
// [c - first][f]: configs[c] (swap_error_on, in double) on `draws` draws of each family f, draw i = (c F + f) draws
// + t seeded derive_seed(seed, 3000000 + i) for the inputs and derive_seed(seed, 4000000 + i) for the method.
std::vector<std::vector<FamilyError>> family_swap_errors(const std::vector<SwapConfig>& configs, std::size_t first,
                                                         std::size_t last, std::size_t draws, Eigen::Index n, Eigen::Index d_k,
                                                         std::uint64_t seed);

}  // namespace attnlab
