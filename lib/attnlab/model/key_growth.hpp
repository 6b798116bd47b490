// Growing the query/key width d_k of every head of an exact-attention ViT mid-training (seed 004,
// section 2; issue 15, claim G10).
//
// Notation. For layer l and head h the model's scores are exactly S = X' M X'^T with X' = [z | 1] (z the
// layer's LN1 output, n x D; the 1-column carries the bias, seed 004's Remark 1.2), M = W'_Q W'_K^T / sqrt(d_k)
// and W'_Q = [Wq_h; bq_h^T] ((D+1) x d_k), W'_K likewise. Seed 004's "S, just before the softmax" is this S,
// so the 1/sqrt(d_k) is inside M. A head grown to d_k' = d_k + p gets factors scaled by d_k'^{1/4} each, so
// that its W'_Q W'_K^T / sqrt(d_k') equals the arm's new M.
//
// The arms, each growing every head of every layer at once (G from one probe of the ungrown model):
//   random_columns (a)  Remark 2.2 with random new columns: the old columns times (d_k'/d_k)^{1/4} (S is
//                       unchanged by the new scale), p new columns of Wq and Wk ~ N(0, 0.02^2) as at
//                       initialisation, new bias entries 0.
//   recipe (b)          the seed's recipe as written: B := G + S, G = dL/dS (L the growth batch's mean
//                       cross-entropy), Z* = X'^+ B X'^+T (eq. 2.1) with X' the growth batch's inputs stacked
//                       (its images' n rows one after another; G is block-diagonal, one n x n block per image:
//                       the scores of different images do not interact), the rank-d_k' truncated SVD
//                       Z* ~ U Sigma V^T, W'_Q = U Sigma^{1/2}, W'_K = V Sigma^{1/2}.
//   descent (c)         the same with B := S + dS*, dS* = argmin <G, dS> s.t. ||dS||_F <= gamma, i.e.
//                       -gamma G / ||G||_F, with gamma = ||G||_F (the step of (b)'s B - S = G, so (b) and (c)
//                       differ in the direction only): B = S - G.
//   closed_form (d)     (c)'s B with the true rank-d_k' minimiser of ||B - X' Z X'^T||_F^2 (G5's closed form,
//                       theory/weighted_lowrank.hpp) in place of the truncated SVD of Z*.
//   (e), no growth, is the model left as it is.
//
// X' is never of full column rank here: LayerNorm's output satisfies z (1/gamma) = (beta . 1/gamma) 1 for
// every input, so [1/gamma; -(beta . 1/gamma)] spans a null direction of X'. X'^+ is therefore seed 004's
// general case, the Moore-Penrose inverse, from the thin SVD X' = U_x S_x V_x^T at X''s numerical rank rho
// (pinv_svd's default cutoff; in double the null direction sits at rounding level, far below it). B
// (count n x count n) is never formed: with K = sum_b U_b^T G_b U_b (U_b the image's rows of U_x),
//   Z* = X'^+ B X'^+T = V_x S_x^{-1} (+-K) S_x^{-1} V_x^T + V_x V_x^T M V_x V_x^T   (+ for (b), - for (c)),
//   C  = U_x^T B U_x  = +-K + S_x V_x^T M V_x S_x, and the closed form truncates C, mapped back by V_x S_x^{-1}.
// (With full column rank V_x V_x^T = I: Z* = R^{-1} (sum_b Q_b^T G_b Q_b) R^{-T} + M in the thin-QR form.)
//
// Adam: a grown model's optimiser state is the ungrown one's with the moments of every Wq, Wk, bq, bk
// restarted (Adam::reset: zero, the tensor's own step count from 0, as PyTorch treats a new tensor): the
// recipe rotates the basis, so the old moments would be meaningless; arm (a) resets them too, so the arms
// differ only in the new weights. The ungrown arm (e) keeps its state.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attnlab/core/matrix.hpp"
#include "attnlab/model/adam.hpp"
#include "attnlab/model/vit.hpp"
#include "attnlab/theory/weighted_lowrank.hpp"

namespace attnlab {

enum class GrowthArm { random_columns, recipe, descent, closed_form };

// "random-columns", "recipe", "descent", "closed-form".
std::string growth_arm_name(GrowthArm arm);

// The stacked inputs X' = [z | 1] of a batch of images (count n rows, n per image), reduced once to its
// thin SVD at numerical rank rho; the growth targets of one head from its G blocks and its M.
class StackedInput {
 public:
  // x_aug: (count n, D + 1), images in consecutive blocks of n rows. Throws std::invalid_argument when its
  // rows are not a positive multiple of n or its last column is not all ones.
  StackedInput(const Mat<double>& x_aug, Eigen::Index n);

  Eigen::Index rank() const { return rank_; }
  Eigen::Index images() const { return images_; }
  // Singular values of X' (all of them, largest first): what the rank was decided from.
  const Vec<double>& singular_values() const { return all_singular_; }

  // ||X' M X'^T||_F over the whole stack, = ||S_x V_x^T M V_x S_x||_F (what M does to the scores; M's
  // component along X''s null space does nothing).
  double scores_norm(const Mat<double>& m) const;
  // K = sum_b U_b^T G_b U_b (rho x rho) for the blocks g[b] (n x n each, one per image).
  Mat<double> projected_blocks(const std::vector<Mat<double>>& g) const;
  // Z* = X'^+ B X'^+T for B = sign blockdiag(g) + X' M X'^T ((D+1) x (D+1)), sign = +1 (b) or -1 (c).
  Mat<double> z_star(const Mat<double>& k, double sign, const Mat<double>& m) const;
  // The rank-r minimiser of ||B - X' Z X'^T||_F^2 for the same B (closed_form_lowrank's answer, without B).
  LowRankFactors closed_form(const Mat<double>& k, double sign, const Mat<double>& m, Eigen::Index r) const;

 private:
  Eigen::Index n_ = 0, images_ = 0, rank_ = 0;
  Mat<double> u_, v_;  // (count n, rho), (D + 1, rho)
  Vec<double> s_, all_singular_;
};

// The new (W'_Q, W'_K) of one head for arm (b), (c) or (d): (D+1) x r factors whose product is the arm's
// new M (no d_k'^{1/4} scaling yet). m is the head's current M, g its G blocks.
LowRankFactors grown_head_factors(const StackedInput& x, const std::vector<Mat<double>>& g, const Mat<double>& m,
                                  GrowthArm arm, Eigen::Index r);

// What growth reads from the growth batch, in double: per layer the stacked X' and per head the G blocks.
struct GrowthBatch {
  Eigen::Index n = 0;                                    // tokens per image
  std::vector<Mat<double>> x_aug;                        // [layer] (count n, D + 1)
  std::vector<std::vector<std::vector<Mat<double>>>> g;  // [layer][head][image] (n, n): dL/dS, L the batch's mean CE
  double loss = 0;                                       // L
};

// Head h's current M = W'_Q W'_K^T / sqrt(d_k) of layer `layer` ((D+1) x (D+1), in double).
template <typename T>
Mat<double> head_score_matrix(const ViT<T>& model, Eigen::Index layer, Eigen::Index head);

struct GrowthOptions {
  Eigen::Index p = 0;       // new columns per head (>= 1)
  GrowthArm arm = GrowthArm::random_columns;
  std::uint64_t seed = 0;   // arm (a)'s new columns: Rng(seed), layer by layer, Wq then Wk, column by column
  double init_std = 0.02;   // their standard deviation (vit_spec.md's initialisation)
};

// A new model with key_width d_k + p: every tensor the source's, except each layer's Wq, Wk, bq, bk,
// grown by the arm. batch is needed (and checked against the model's shapes) for (b), (c), (d).
// Throws std::invalid_argument for a method other than exact, p < 1, or a batch that does not fit.
template <typename T>
std::unique_ptr<ViT<T>> grow_key_width(ViT<T>& model, const GrowthOptions& options, const GrowthBatch* batch);

// The grown model's optimiser state: a copy of `state` (the source model's) with every layer's Wq, Wk,
// bq, bk restarted at the grown sizes (Adam::reset).
template <typename T>
Adam<T> adam_after_growth(const Adam<T>& state, ViT<T>& grown);

}  // namespace attnlab
