// The token embedding: forward and backward.
#include "attnlab/model/token_embedding.hpp"

#include <stdexcept>
#include <string>

namespace attnlab {

namespace {

void check_tokens(std::span<const std::int32_t> key, std::span<const std::int32_t> value, Eigen::Index K, Eigen::Index V) {
  if (key.size() != value.size())
    throw std::invalid_argument("token_embedding: " + std::to_string(key.size()) + " keys for " + std::to_string(value.size()) + " values");
  for (std::size_t t = 0; t < key.size(); ++t) {
    if (key[t] < 0 || key[t] >= K)
      throw std::out_of_range("token_embedding: key " + std::to_string(key[t]) + " outside 0.." + std::to_string(K - 1));
    if (value[t] < -1 || value[t] >= V)
      throw std::out_of_range("token_embedding: value " + std::to_string(value[t]) + " outside -1.." + std::to_string(V - 1));
  }
}

}  // namespace

template <typename T>
void token_embedding_forward(std::span<const std::int32_t> key, std::span<const std::int32_t> value, const Mat<T>& keys,
                             const Mat<T>& values, const Mat<T>& query, Mat<T>& x) {
  check_tokens(key, value, keys.rows(), values.rows());
  const auto n = static_cast<Eigen::Index>(key.size());
  x.resize(n, keys.cols());
  for (Eigen::Index t = 0; t < n; ++t) {
    const auto i = static_cast<std::size_t>(t);
    x.row(t) = keys.row(key[i]) + (value[i] >= 0 ? values.row(value[i]) : query.row(0));
  }
}

template <typename T>
void token_embedding_backward(std::span<const std::int32_t> key, std::span<const std::int32_t> value, const Mat<T>& dx,
                              Mat<T>& dkeys, Mat<T>& dvalues, Mat<T>& dquery) {
  check_tokens(key, value, dkeys.rows(), dvalues.rows());
  for (Eigen::Index t = 0; t < dx.rows(); ++t) {
    const auto i = static_cast<std::size_t>(t);
    dkeys.row(key[i]) += dx.row(t);
    if (value[i] >= 0)
      dvalues.row(value[i]) += dx.row(t);
    else
      dquery.row(0) += dx.row(t);
  }
}

template void token_embedding_forward<float>(std::span<const std::int32_t>, std::span<const std::int32_t>, const Mat<float>&,
                                             const Mat<float>&, const Mat<float>&, Mat<float>&);
template void token_embedding_forward<double>(std::span<const std::int32_t>, std::span<const std::int32_t>, const Mat<double>&,
                                              const Mat<double>&, const Mat<double>&, Mat<double>&);
template void token_embedding_backward<float>(std::span<const std::int32_t>, std::span<const std::int32_t>, const Mat<float>&,
                                              Mat<float>&, Mat<float>&, Mat<float>&);
template void token_embedding_backward<double>(std::span<const std::int32_t>, std::span<const std::int32_t>, const Mat<double>&,
                                               Mat<double>&, Mat<double>&, Mat<double>&);

}  // namespace attnlab
