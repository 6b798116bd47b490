// Argument checks shared by the attention kernels: misuse throws std::invalid_argument naming the value.
#pragma once

#include <Eigen/Dense>
#include <stdexcept>
#include <string>

namespace attnlab::detail {

// Q is n_q x d, K is n_k x d, V is n_k x d_v. An empty key set has no softmax (the
// normaliser would be a sum over nothing), and d = 0 has no 1/sqrt(d) scale, so both are
// refused; n_q = 0 queries is refused as well, so every method treats sizes alike.
template <typename MQ, typename MK, typename MV>
void check_attention_shapes(const char* who, const MQ& q, const MK& k, const MV& v) {
  auto s = [](Eigen::Index x) { return std::to_string(x); };
  if (q.rows() < 1) throw std::invalid_argument(std::string(who) + ": Q has n = " + s(q.rows()) + " rows; need at least 1");
  if (k.rows() < 1) throw std::invalid_argument(std::string(who) + ": K has n = " + s(k.rows()) + " rows; need at least 1");
  if (q.cols() < 1) throw std::invalid_argument(std::string(who) + ": d (= " + s(q.cols()) + ") must be at least 1");
  if (k.cols() != q.cols())
    throw std::invalid_argument(std::string(who) + ": K has d = " + s(k.cols()) + " columns but Q has " + s(q.cols()));
  if (v.rows() != k.rows())
    throw std::invalid_argument(std::string(who) + ": V has " + s(v.rows()) + " rows but K has " + s(k.rows()));
}

}  // namespace attnlab::detail
