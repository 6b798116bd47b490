// Growing d_k: the stacked input's reduction, the arms' new factors, the grown model and its Adam state.
#include "attnlab/model/key_growth.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "attnlab/linalg/checked_svd.hpp"
#include "attnlab/linalg/decompositions.hpp"
#include "attnlab/core/rng.hpp"

namespace attnlab {

namespace {

// Pads (or keeps) a factor to exactly r columns: a rank below r leaves zero columns.
Mat<double> with_columns(const Mat<double>& f, Eigen::Index r) {
  Mat<double> out = Mat<double>::Zero(f.rows(), r);
  const Eigen::Index k = std::min(r, f.cols());
  out.leftCols(k) = f.leftCols(k);
  return out;
}

bool is_attention_tensor(const std::string& name, Eigen::Index layers) {
  for (Eigen::Index l = 0; l < layers; ++l) {
    const std::string pre = "block" + std::to_string(l) + ".attn.";
    if (name == pre + "Wq" || name == pre + "Wk" || name == pre + "bq" || name == pre + "bk") return true;
  }
  return false;
}

}  // namespace

std::string growth_arm_name(GrowthArm arm) {
  switch (arm) {
    case GrowthArm::random_columns: return "random-columns";
    case GrowthArm::recipe: return "recipe";
    case GrowthArm::descent: return "descent";
    case GrowthArm::closed_form: return "closed-form";
  }
  return "?";
}

StackedInput::StackedInput(const Mat<double>& x_aug, Eigen::Index n) : n_(n) {
  if (n <= 0 || x_aug.rows() == 0 || x_aug.rows() % n != 0 || x_aug.cols() < 2)
    throw std::invalid_argument("StackedInput: X' is " + std::to_string(x_aug.rows()) + " x " + std::to_string(x_aug.cols()) +
                                ", not images of n = " + std::to_string(n) + " rows with a bias column");
  if (!(x_aug.col(x_aug.cols() - 1).array() == 1.0).all())
    throw std::invalid_argument("StackedInput: the last column of X' is not all ones (the bias column)");
  images_ = x_aug.rows() / n;
  // Checked: Eigen's BDCSVD is wrong on some matrices (checked_svd.hpp); where it passes, its answer unchanged.
  const CheckedSvd<double> svd = checked_svd<double>(x_aug);
  all_singular_ = svd.s;
  // pinv_svd's default cutoff: max(rows, cols) eps s_max.
  const double cutoff = static_cast<double>(std::max(x_aug.rows(), x_aug.cols())) * std::numeric_limits<double>::epsilon() *
                        all_singular_(0);
  while (rank_ < all_singular_.size() && all_singular_(rank_) > cutoff) ++rank_;
  u_ = svd.u.leftCols(rank_);
  v_ = svd.v.leftCols(rank_);
  s_ = all_singular_.head(rank_);
}

double StackedInput::scores_norm(const Mat<double>& m) const {
  return (s_.asDiagonal() * (v_.transpose() * m * v_) * s_.asDiagonal()).norm();
}

Mat<double> StackedInput::projected_blocks(const std::vector<Mat<double>>& g) const {
  if (static_cast<Eigen::Index>(g.size()) != images_)
    throw std::invalid_argument("StackedInput: " + std::to_string(g.size()) + " G blocks for " + std::to_string(images_) + " images");
  Mat<double> k = Mat<double>::Zero(rank_, rank_);
  for (Eigen::Index b = 0; b < images_; ++b) {
    const Mat<double>& gb = g[static_cast<std::size_t>(b)];
    if (gb.rows() != n_ || gb.cols() != n_)
      throw std::invalid_argument("StackedInput: a G block is " + std::to_string(gb.rows()) + " x " + std::to_string(gb.cols()) +
                                  ", not n x n with n = " + std::to_string(n_));
    const auto ub = u_.middleRows(b * n_, n_);
    k.noalias() += ub.transpose() * (gb * ub);
  }
  return k;
}

Mat<double> StackedInput::z_star(const Mat<double>& k, double sign, const Mat<double>& m) const {
  const Mat<double> w = v_ * s_.cwiseInverse().asDiagonal();  // X'^+ = W U_x^T
  const Mat<double> vmv = v_.transpose() * m * v_;
  return sign * (w * k * w.transpose()) + v_ * vmv * v_.transpose();
}

LowRankFactors StackedInput::closed_form(const Mat<double>& k, double sign, const Mat<double>& m, Eigen::Index r) const {
  const Mat<double> c = sign * k + s_.asDiagonal() * (v_.transpose() * m * v_) * s_.asDiagonal();
  const CheckedSvd<double> svd = checked_svd<double>(c);  // as above
  const Eigen::Index kept = std::min(r, rank_);
  const Vec<double> root = svd.s.head(kept).cwiseSqrt();
  const Mat<double> back = v_ * s_.cwiseInverse().asDiagonal();
  return {with_columns(back * svd.u.leftCols(kept) * root.asDiagonal(), r),
          with_columns(back * svd.v.leftCols(kept) * root.asDiagonal(), r)};
}

LowRankFactors grown_head_factors(const StackedInput& x, const std::vector<Mat<double>>& g, const Mat<double>& m,
                                  GrowthArm arm, Eigen::Index r) {
  const Mat<double> k = x.projected_blocks(g);
  switch (arm) {
    case GrowthArm::recipe:
    case GrowthArm::descent: {
      const LowRankFactors f = truncated_svd_factors(x.z_star(k, arm == GrowthArm::recipe ? 1.0 : -1.0, m), r);
      return {with_columns(f.left, r), with_columns(f.right, r)};
    }
    case GrowthArm::closed_form: return x.closed_form(k, -1.0, m, r);
    case GrowthArm::random_columns: break;
  }
  throw std::invalid_argument("grown_head_factors: arm " + growth_arm_name(arm) + " does not use the batch");
}

template <typename T>
Mat<double> head_score_matrix(const ViT<T>& model, Eigen::Index layer, Eigen::Index head) {
  const auto& a = model.params().blocks[static_cast<std::size_t>(layer)].attn;
  const Eigen::Index D = a.Wq.rows(), dk = a.Wq.cols() / model.config().heads;
  Mat<double> wq(D + 1, dk), wk(D + 1, dk);
  wq.topRows(D) = a.Wq.middleCols(head * dk, dk).template cast<double>();
  wk.topRows(D) = a.Wk.middleCols(head * dk, dk).template cast<double>();
  wq.row(D) = a.bq.segment(head * dk, dk).template cast<double>().transpose();
  wk.row(D) = a.bk.segment(head * dk, dk).template cast<double>().transpose();
  return wq * wk.transpose() / std::sqrt(static_cast<double>(dk));
}

template <typename T>
std::unique_ptr<ViT<T>> grow_key_width(ViT<T>& model, const GrowthOptions& options, const GrowthBatch* batch) {
  const ViTConfig& c = model.config();
  if (c.attention.method != "exact")
    throw std::invalid_argument("grow_key_width: method \"" + c.attention.method + "\"; growth is defined for exact attention");
  if (options.p < 1) throw std::invalid_argument("grow_key_width: p = " + std::to_string(options.p) + " must be >= 1");
  const Eigen::Index D = c.D, H = c.heads, L = c.layers, dk = c.key_head_width(), dk2 = dk + options.p;
  const bool uses_batch = options.arm != GrowthArm::random_columns;
  if (uses_batch) {
    bool fits = batch != nullptr && batch->n == c.tokens() && static_cast<Eigen::Index>(batch->x_aug.size()) == L &&
                static_cast<Eigen::Index>(batch->g.size()) == L;
    for (Eigen::Index l = 0; fits && l < L; ++l)
      fits = batch->x_aug[static_cast<std::size_t>(l)].cols() == D + 1 &&
             static_cast<Eigen::Index>(batch->g[static_cast<std::size_t>(l)].size()) == H;
    if (!fits) throw std::invalid_argument("grow_key_width: arm " + growth_arm_name(options.arm) + " needs a growth batch of this model's shapes");
  }
  ViTConfig grown_config = c;
  grown_config.key_width = dk2;
  auto grown = std::make_unique<ViT<T>>(grown_config);
  // Every tensor but the four that change shape, as it is.
  const auto from = model.parameter_tensors();
  const auto to = grown->parameter_tensors();
  for (std::size_t i = 0; i < from.size(); ++i)
    if (!is_attention_tensor(from[i].name, L)) std::copy(from[i].data, from[i].data + from[i].size(), to[i].data);

  Rng rng(options.seed);
  const double old_scale = std::pow(static_cast<double>(dk2) / static_cast<double>(dk), 0.25);
  const double new_scale = std::pow(static_cast<double>(dk2), 0.25);
  for (Eigen::Index l = 0; l < L; ++l) {
    const auto& a = model.params().blocks[static_cast<std::size_t>(l)].attn;
    auto& g = grown->params().blocks[static_cast<std::size_t>(l)].attn;
    if (!uses_batch) {
      // (a): old columns rescaled, new ones drawn (all of Wq's, then all of Wk's), new biases 0.
      const Mat<double> new_q = gaussian_matrix<double>(D, H * options.p, rng, options.init_std);
      const Mat<double> new_k = gaussian_matrix<double>(D, H * options.p, rng, options.init_std);
      g.bq.setZero();
      g.bk.setZero();
      for (Eigen::Index h = 0; h < H; ++h) {
        g.Wq.middleCols(h * dk2, dk) = (a.Wq.middleCols(h * dk, dk).template cast<double>() * old_scale).template cast<T>();
        g.Wk.middleCols(h * dk2, dk) = (a.Wk.middleCols(h * dk, dk).template cast<double>() * old_scale).template cast<T>();
        g.bq.segment(h * dk2, dk) = (a.bq.segment(h * dk, dk).template cast<double>() * old_scale).template cast<T>();
        g.bk.segment(h * dk2, dk) = (a.bk.segment(h * dk, dk).template cast<double>() * old_scale).template cast<T>();
        g.Wq.middleCols(h * dk2 + dk, options.p) = new_q.middleCols(h * options.p, options.p).template cast<T>();
        g.Wk.middleCols(h * dk2 + dk, options.p) = new_k.middleCols(h * options.p, options.p).template cast<T>();
      }
      continue;
    }
    const StackedInput x(batch->x_aug[static_cast<std::size_t>(l)], batch->n);
    for (Eigen::Index h = 0; h < H; ++h) {
      const LowRankFactors f = grown_head_factors(x, batch->g[static_cast<std::size_t>(l)][static_cast<std::size_t>(h)],
                                                  head_score_matrix(model, l, h), options.arm, dk2);
      const Mat<double> wq = f.left * new_scale, wk = f.right * new_scale;
      g.Wq.middleCols(h * dk2, dk2) = wq.topRows(D).template cast<T>();
      g.Wk.middleCols(h * dk2, dk2) = wk.topRows(D).template cast<T>();
      g.bq.segment(h * dk2, dk2) = wq.row(D).transpose().template cast<T>();
      g.bk.segment(h * dk2, dk2) = wk.row(D).transpose().template cast<T>();
    }
  }
  return grown;
}

template <typename T>
Adam<T> adam_after_growth(const Adam<T>& state, ViT<T>& grown) {
  Adam<T> out = state;
  const auto tensors = grown.parameter_tensors();
  for (std::size_t i = 0; i < tensors.size(); ++i)
    if (is_attention_tensor(tensors[i].name, grown.config().layers)) out.reset(i, tensors[i].size());
  return out;
}

template Mat<double> head_score_matrix<float>(const ViT<float>&, Eigen::Index, Eigen::Index);
template Mat<double> head_score_matrix<double>(const ViT<double>&, Eigen::Index, Eigen::Index);
template std::unique_ptr<ViT<float>> grow_key_width<float>(ViT<float>&, const GrowthOptions&, const GrowthBatch*);
template std::unique_ptr<ViT<double>> grow_key_width<double>(ViT<double>&, const GrowthOptions&, const GrowthBatch*);
template Adam<float> adam_after_growth<float>(const Adam<float>&, ViT<float>&);
template Adam<double> adam_after_growth<double>(const Adam<double>&, ViT<double>&);

}  // namespace attnlab
