// The query head: forward and backward.
#include "attnlab/model/query_head.hpp"

#include <stdexcept>
#include <string>

#include "attnlab/model/linear.hpp"

namespace attnlab {

template <typename T>
void query_head_forward(const Mat<T>& x, std::span<const std::int64_t> rows, const Vec<T>& gamma, const Vec<T>& beta,
                        const Mat<T>& W, const Vec<T>& b, Mat<T>& logits, QueryHeadTape<T>& tape) {
  // pass 1: the query rows (LayerNorm works row by row, so normalising only these is the same as normalising all).
  tape.gathered.resize(static_cast<Eigen::Index>(rows.size()), x.cols());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] < 0 || rows[i] >= x.rows())
      throw std::out_of_range("query_head: row " + std::to_string(rows[i]) + " outside 0.." + std::to_string(x.rows() - 1));
    tape.gathered.row(static_cast<Eigen::Index>(i)) = x.row(rows[i]);
  }
  // pass 2: the final LayerNorm; pass 3: the logits over the values.
  layernorm_forward(tape.gathered, gamma, beta, tape.ln_out, tape.ln);
  linear_forward(tape.ln_out, W, b, logits);
}

template <typename T>
void query_head_backward(std::span<const std::int64_t> rows, Eigen::Index x_rows, const Vec<T>& gamma, const Mat<T>& W,
                         const Mat<T>& dlogits, QueryHeadTape<T>& tape, Mat<T>& dx, Vec<T>& dgamma, Vec<T>& dbeta,
                         Mat<T>& dW, Vec<T>& db) {
  // The forward's passes in reverse, then the rows scattered back (each row is read once: no sums).
  linear_backward(tape.ln_out, W, dlogits, &tape.dln, dW, db);
  layernorm_backward(tape.dln, tape.ln, gamma, tape.dgathered, dgamma, dbeta);
  dx.setZero(x_rows, W.rows());
  for (std::size_t i = 0; i < rows.size(); ++i) dx.row(rows[i]) = tape.dgathered.row(static_cast<Eigen::Index>(i));
}

template void query_head_forward<float>(const Mat<float>&, std::span<const std::int64_t>, const Vec<float>&, const Vec<float>&,
                                        const Mat<float>&, const Vec<float>&, Mat<float>&, QueryHeadTape<float>&);
template void query_head_forward<double>(const Mat<double>&, std::span<const std::int64_t>, const Vec<double>&,
                                         const Vec<double>&, const Mat<double>&, const Vec<double>&, Mat<double>&,
                                         QueryHeadTape<double>&);
template void query_head_backward<float>(std::span<const std::int64_t>, Eigen::Index, const Vec<float>&, const Mat<float>&,
                                         const Mat<float>&, QueryHeadTape<float>&, Mat<float>&, Vec<float>&, Vec<float>&,
                                         Mat<float>&, Vec<float>&);
template void query_head_backward<double>(std::span<const std::int64_t>, Eigen::Index, const Vec<double>&, const Mat<double>&,
                                          const Mat<double>&, QueryHeadTape<double>&, Mat<double>&, Vec<double>&,
                                          Vec<double>&, Mat<double>&, Vec<double>&);

}  // namespace attnlab
