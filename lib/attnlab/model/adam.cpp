// Adam and the cosine schedule.
#include "attnlab/model/adam.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

namespace attnlab {

double cosine_lr(double base, std::int64_t t, std::int64_t total) {
  if (total <= 0 || t < 0 || t >= total)
    throw std::invalid_argument("cosine_lr: step " + std::to_string(t) + " outside 0.." + std::to_string(total - 1));
  return base * (1.0 + std::cos(std::numbers::pi * static_cast<double>(t) / static_cast<double>(total))) / 2.0;
}

template <typename T>
Adam<T>::Adam(const std::vector<TensorRef<T>>& params, const AdamOptions& options) : options_(options) {
  for (const auto& p : params) {
    m_.push_back(Vec<T>::Zero(p.size()));
    v_.push_back(Vec<T>::Zero(p.size()));
    count_.push_back(0);
  }
}

template <typename T>
void Adam<T>::reset(std::size_t index, Eigen::Index size) {
  if (index >= m_.size() || size < 0)
    throw std::invalid_argument("Adam::reset: tensor " + std::to_string(index) + " of " + std::to_string(m_.size()) +
                                ", size " + std::to_string(size));
  m_[index] = Vec<T>::Zero(size);
  v_[index] = Vec<T>::Zero(size);
  count_[index] = 0;
}

template <typename T>
void Adam<T>::step(const std::vector<TensorRef<T>>& params, const std::vector<TensorRef<T>>& grads, double lr) {
  if (params.size() != m_.size() || grads.size() != m_.size())
    throw std::invalid_argument("Adam: " + std::to_string(params.size()) + " tensors for state of " +
                                std::to_string(m_.size()));
  for (std::size_t i = 0; i < params.size(); ++i)
    if (grads[i].size() != params[i].size() || m_[i].size() != params[i].size())
      throw std::invalid_argument("Adam: tensor " + params[i].name + " changed size");
  ++t_;
  const T b1 = static_cast<T>(options_.beta1), b2 = static_cast<T>(options_.beta2);
  const T one_b1 = static_cast<T>(1.0 - options_.beta1), one_b2 = static_cast<T>(1.0 - options_.beta2);
  const T eps = static_cast<T>(options_.eps);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Eigen::Index size = params[i].size();
    // The bias corrections of this tensor's own step count (every tensor's is t_ unless reset()).
    const auto t = static_cast<double>(++count_[i]);
    const double bc1 = 1.0 - std::pow(options_.beta1, t);
    const double bc2 = 1.0 - std::pow(options_.beta2, t);
    const T step_size = static_cast<T>(lr / bc1), bc2_sqrt = static_cast<T>(std::sqrt(bc2));
    Eigen::Map<Vec<T>> p(params[i].data, size);
    const Eigen::Map<const Vec<T>> g(grads[i].data, size);
    m_[i].array() = m_[i].array() * b1 + g.array() * one_b1;
    v_[i].array() = v_[i].array() * b2 + g.array().square() * one_b2;
    p.array() -= step_size * (m_[i].array() / (v_[i].array().sqrt() / bc2_sqrt + eps));
  }
}

template class Adam<float>;
template class Adam<double>;

}  // namespace attnlab
