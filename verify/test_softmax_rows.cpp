// Checks of the softmax module (core/softmax.hpp): the column softmax and its backward (the row versions
// their transposes), the pieces the fast kernels share, exp_rows / exp_rows_inplace (queries down the rows)
// and online_softmax_block_rows (the fused kernel's running maximum and sum), and the merge of key blocks, in
// float and double, at edge sizes (1, 2, 3, 17) and random ones, with logits up to 1e30.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "attnlab/core/rng.hpp"
#include "attnlab/core/softmax.hpp"
#include "support.hpp"

using namespace attnlab;
using namespace attnlab::testing;

namespace {

std::vector<Eigen::Index> softmax_rows_sizes(Rng& rng, Eigen::Index cap) { return test_sizes(rng, {1, cap}, 2, {1, 2, 3, 17}); }

// Logits of a random scale per call (1, 1e3 or 1e30): exp(x) alone would overflow at the larger ones.
template <typename T>
Mat<T> softmax_rows_logits(Eigen::Index rows, Eigen::Index cols, Rng& rng) {
  const double scales[] = {1.0, 1e3, 1e30};
  const double scale = scales[static_cast<int>(rng.uniform() * 3) % 3];
  return (uniform_matrix(rows, cols, rng, -1.0, 1.0) * scale).template cast<T>();
}

template <typename T>
void check_exp_rows(Rng& rng) {
  const T eps = std::numeric_limits<T>::epsilon();
  for (Eigen::Index rows : softmax_rows_sizes(rng, 200))
    for (Eigen::Index cols : softmax_rows_sizes(rng, 70)) {
      INFO("rows=" << rows << " cols=" << cols);
      const Mat<T> src = softmax_rows_logits<T>(rows, cols, rng);
      Mat<T> e(rows, cols);
      Vec<T> row_max;
      const Vec<T> sums = exp_rows(e, src, &row_max);
      CHECK(row_max == src.rowwise().maxCoeff());  // the maxima exactly
      // Each entry within a few units in the last place of exp(x) in double, x = src - max rounded to T as the
      // kernels round it (that rounding is the caller's; what is checked here is the vectorised exp); every
      // exponent <= 0, so every entry <= 1.
      double worst = 0;
      for (Eigen::Index j = 0; j < cols; ++j)
        for (Eigen::Index i = 0; i < rows; ++i) {
          const double exact = std::exp(static_cast<double>(static_cast<T>(src(i, j) - row_max(i))));
          const double err = std::abs(static_cast<double>(e(i, j)) - exact);
          worst = std::max(worst, exact > 1e-30 ? err / (exact * static_cast<double>(eps)) : (err <= 1e-30 ? 0 : HUGE_VAL));
        }
      ATTNLAB_CHECK_RATIO_LE(worst, 4.0, "|e - exp(src - max)| / (eps exp(src - max))");
      CHECK((e.array() <= T(1)).all());
      CHECK((e.rowwise().maxCoeff().array() == T(1)).all());  // the maximal term is exp(0) = 1 exactly
      // The sums: the columns added in order, bit for bit, so each is >= 1.
      Vec<T> in_order = e.col(0);
      for (Eigen::Index j = 1; j < cols; ++j) in_order += e.col(j);
      CHECK(sums == in_order);
      CHECK((sums.array() >= T(1)).all());
      // In place gives the same bits and leaves nothing of src behind.
      Mat<T> s = src;
      Vec<T> row_max_inplace;
      const Vec<T> sums_inplace = exp_rows_inplace(s, &row_max_inplace);
      CHECK(s == e);
      CHECK(sums_inplace == sums);
      CHECK(row_max_inplace == row_max);
    }
}

// The running maximum and sum over key blocks, queries down the rows: after every block, m is the maximum of
// all logits so far (exactly) and l the sum of exp(x - m) over them (x a logit), within eps sum_x exp(x - m)
// (2 |x - m| + count + 4 blocks): each term's exponent is rounded once in its own block and once per later
// maximum (those differences add up to at most |x - m|), its exp and rescalings add a few roundings, the sum
// one per term. The block's scores come out as exp(x - m) for the m after that block, its correction as
// exp(m_before - m), each within a few units in the last place of exp of the exponent rounded to T.
template <typename T>
void check_online_rows(Rng& rng) {
  const double eps = static_cast<double>(std::numeric_limits<T>::epsilon());
  for (Eigen::Index rows : softmax_rows_sizes(rng, 100)) {
    const Eigen::Index blocks = 1 + static_cast<Eigen::Index>(rng.uniform() * 4);
    Vec<T> m = Vec<T>::Constant(rows, -std::numeric_limits<T>::infinity()), l = Vec<T>::Zero(rows), correction(rows);
    Mat<T> seen(rows, 0);
    for (Eigen::Index b = 0; b < blocks; ++b) {
      const Eigen::Index cols = 1 + static_cast<Eigen::Index>(rng.uniform() * 40);
      INFO("rows=" << rows << " block " << b << " of " << blocks << ", cols=" << cols);
      const Mat<T> logits = softmax_rows_logits<T>(rows, cols, rng);
      Mat<T> s = logits;
      const Vec<T> m_before = m;
      online_softmax_block_rows(s, m, l, correction);
      Mat<T> all(rows, seen.cols() + cols);
      all << seen, logits;
      seen = all;
      CHECK(m == seen.rowwise().maxCoeff());
      double worst_l = 0, worst_s = 0, worst_c = 0;
      for (Eigen::Index i = 0; i < rows; ++i) {
        double exact = 0, bound = 0;
        for (Eigen::Index j = 0; j < seen.cols(); ++j) {
          const double x = static_cast<double>(seen(i, j)) - static_cast<double>(m(i)), term = std::exp(x);
          exact += term;
          bound += term * (2 * std::abs(x) + static_cast<double>(seen.cols()) + 4 * static_cast<double>(blocks));
        }
        worst_l = std::max(worst_l, std::abs(static_cast<double>(l(i)) - exact) / (eps * bound));
        for (Eigen::Index j = 0; j < cols; ++j) {
          const double e = std::exp(static_cast<double>(static_cast<T>(logits(i, j) - m(i))));
          worst_s = std::max(worst_s, e > 1e-30 ? std::abs(static_cast<double>(s(i, j)) - e) / (e * eps)
                                                : (std::abs(static_cast<double>(s(i, j)) - e) <= 1e-30 ? 0.0 : HUGE_VAL));
        }
        const double c = b == 0 ? 0.0 : std::exp(static_cast<double>(static_cast<T>(m_before(i) - m(i))));
        worst_c = std::max(worst_c, c > 1e-30 ? std::abs(static_cast<double>(correction(i)) - c) / (c * eps)
                                              : (std::abs(static_cast<double>(correction(i)) - c) <= 1e-30 ? 0.0 : HUGE_VAL));
      }
      ATTNLAB_CHECK_RATIO_LE(worst_l, 1.0, "|l - sum exp(x - m)| / (eps sum exp(x - m) (2|x - m| + count + 4 blocks))");
      ATTNLAB_CHECK_RATIO_LE(worst_s, 4.0, "|s - exp(logit - m)| / (eps exp(logit - m))");
      ATTNLAB_CHECK_RATIO_LE(worst_c, 4.0, "|correction - exp(m_before - m)| / (eps exp(m_before - m))");
    }
  }
}

// Runs check(float{}, rng) then check(double{}, rng) on one stream seeded from test_seed(default_seed).
template <typename Check>
void in_float_and_double(std::uint64_t default_seed, Check check) {
  const std::uint64_t seed = test_seed(default_seed);
  Rng rng(seed);
  INFO("seed " << seed);
  check(float{}, rng);
  check(double{}, rng);
}

}  // namespace

TEST_CASE("exp_rows: exp(src - row max) per entry, exact maxima, sums in column order, in place the same bits") {
  in_float_and_double(20261130, [](auto t, Rng& rng) { check_exp_rows<decltype(t)>(rng); });
}

TEST_CASE("online_softmax_block_rows: running maxima exact, running sums within their bound, over 1-4 key blocks") {
  in_float_and_double(20261131, [](auto t, Rng& rng) { check_online_rows<decltype(t)>(rng); });
}

namespace {

// softmax_cols_inplace against the softmax in long double of the same (T-valued) logits: each entry within
// (rows + 8) eps absolutely (the exponent x - max rounded once, which moves p by |x - max| p eps / 2 <= eps / 2
// since p <= exp(-|x - max|); Eigen's vectorised exp within 4 eps relative; the sum of `rows` terms and one
// product); every column sums to 1 within (rows + 2) eps. The rows version is the transpose bit for bit. The
// backward against the Jacobian diag(p) - p p^T applied in long double to the same p and dp: within
// (rows + 4) eps max|dp| per entry (the dot product of `rows` terms, one difference, one product).
template <typename T>
void check_softmax_cols(Rng& rng) {
  const double eps = static_cast<double>(std::numeric_limits<T>::epsilon());
  for (Eigen::Index rows : softmax_rows_sizes(rng, 120))
    for (Eigen::Index cols : softmax_rows_sizes(rng, 30)) {
      INFO("rows=" << rows << " cols=" << cols);
      const Mat<T> logits = softmax_rows_logits<T>(rows, cols, rng);
      const Mat<T> dp = uniform_matrix(rows, cols, rng, -1.0, 1.0).template cast<T>();
      Mat<T> p = logits;
      softmax_cols_inplace(p);
      Mat<T> ds = dp;
      softmax_cols_backward_inplace(p, ds);
      // One definition: the row softmax and its backward are the column ones of the transposes.
      CHECK(softmax_rows(Mat<T>(logits.transpose())) == Mat<T>(p.transpose()));
      CHECK(softmax_rows_backward(Mat<T>(p.transpose()), Mat<T>(dp.transpose())) == Mat<T>(ds.transpose()));
      double worst_p = 0, worst_ds = 0, worst_sum = 0;
      for (Eigen::Index c = 0; c < cols; ++c) {
        long double m = logits(0, c), sum = 0, dot = 0;
        for (Eigen::Index r = 1; r < rows; ++r) m = std::max<long double>(m, logits(r, c));
        for (Eigen::Index r = 0; r < rows; ++r) sum += std::exp(static_cast<long double>(logits(r, c)) - m);
        for (Eigen::Index r = 0; r < rows; ++r) dot += static_cast<long double>(p(r, c)) * dp(r, c);
        const double dp_max = std::max(static_cast<double>(dp.col(c).cwiseAbs().maxCoeff()), 1e-300);
        for (Eigen::Index r = 0; r < rows; ++r) {
          const long double exact = std::exp(static_cast<long double>(logits(r, c)) - m) / sum;
          worst_p = std::max(worst_p, static_cast<double>(std::abs(p(r, c) - exact)) / eps);
          const long double jac = static_cast<long double>(p(r, c)) * (dp(r, c) - dot);
          worst_ds = std::max(worst_ds, static_cast<double>(std::abs(ds(r, c) - jac)) / (eps * dp_max));
        }
        worst_sum = std::max(worst_sum, std::abs(static_cast<double>(p.col(c).sum()) - 1) / eps);
      }
      const double n = static_cast<double>(rows);
      ATTNLAB_CHECK_RATIO_LE(worst_p / (n + 8), 1.0, "|p - softmax| / ((rows + 8) eps)");
      ATTNLAB_CHECK_RATIO_LE(worst_sum / (n + 2), 1.0, "|sum p - 1| / ((rows + 2) eps)");
      ATTNLAB_CHECK_RATIO_LE(worst_ds / (n + 4), 1.0, "|ds - (diag(p) - p p^T) dp| / ((rows + 4) eps max|dp|)");
    }
}

// merge_softmax_partials: blocks of keys summarised as the fast kernels summarise them ([exp(s - m_j) V_j,
// m_j, sums]) and merged equal the softmax of all keys at once times V: each within (keys + blocks + 8) eps
// max|v| per entry of the exact value (the rescalings add one rounding per block), so within twice that of
// each other.
template <typename T>
void check_merge(Rng& rng) {
  const double eps = static_cast<double>(std::numeric_limits<T>::epsilon());
  for (Eigen::Index rows : softmax_rows_sizes(rng, 40)) {
    const Eigen::Index blocks = 1 + static_cast<Eigen::Index>(rng.uniform() * 4), dv = 3;
    std::vector<Mat<T>> parts;
    Mat<T> all(rows, 0), values(0, dv);
    for (Eigen::Index b = 0; b < blocks; ++b) {
      const Eigen::Index keys = 1 + static_cast<Eigen::Index>(rng.uniform() * 30);
      const Mat<T> s = softmax_rows_logits<T>(rows, keys, rng), v = uniform_matrix(keys, dv, rng, -1.0, 1.0).template cast<T>();
      Mat<T> e = s, part(rows, dv + 2);
      Vec<T> m;
      const Vec<T> sums = exp_rows_inplace(e, &m);
      part << e * v, m, sums;
      parts.push_back(part);
      Mat<T> a(rows, all.cols() + keys), w(values.rows() + keys, dv);
      a << all, s;
      w << values, v;
      all = a;
      values = w;
    }
    INFO("rows=" << rows << " blocks=" << blocks << " keys=" << all.cols());
    const Mat<T> merged = merge_softmax_partials(parts.data(), blocks);
    const Mat<T> direct = softmax_rows(all) * values;
    const double bound = 2 * (static_cast<double>(all.cols() + blocks) + 8) * eps;
    ATTNLAB_CHECK_RATIO_LE(static_cast<double>((merged - direct).cwiseAbs().maxCoeff()) / bound, 1.0,
                           "|merged - softmax(all) V| / (2 (keys + blocks + 8) eps max|v|)");
  }
}

}  // namespace

TEST_CASE("softmax_cols_inplace: the softmax within its bound, rows its transpose bit for bit, the backward the Jacobian") {
  in_float_and_double(20261133, [](auto t, Rng& rng) { check_softmax_cols<decltype(t)>(rng); });
}

TEST_CASE("merge_softmax_partials: key blocks summarised and merged equal the softmax over all keys") {
  in_float_and_double(20261134, [](auto t, Rng& rng) { check_merge<decltype(t)>(rng); });
}
