// Counted cost of one head of each attention method: multiply-adds and workspace bytes.
#pragma once

#include <cstddef>

namespace attnlab {

// Multiply-adds of the matrix products (each a x b times b x c is a b c), the dominant term of
// every method; exponentials, divisions and O(n d) passes are left out and named where they are.
// Workspace: bytes of the buffers the method allocates besides its inputs and its n x d output,
// for scalars of `scalar_bytes` bytes. One head, n queries and keys, head dimension d = d_v.
struct AttentionCost {
  double multiply_adds = 0;
  double workspace_bytes = 0;
};

namespace detail {
inline double dbl(long long x) { return static_cast<double>(x); }
}  // namespace detail

// softmax(Q K^T / sqrt(d)) V: Q K^T and P V, n^2 d each (plus n^2 exp); P is n x n.
inline AttentionCost softmax_attention_cost(long long n, long long d, std::size_t scalar_bytes) {
  const double nn = detail::dbl(n), dd = detail::dbl(d), s = static_cast<double>(scalar_bytes);
  return {2 * nn * nn * dd, nn * nn * s};
}

// Streaming: the same products, in blocks of b keys; scores n x b, accumulator n x d, running max and sum.
inline AttentionCost streaming_attention_cost(long long n, long long d, long long key_block, std::size_t scalar_bytes) {
  const double nn = detail::dbl(n), dd = detail::dbl(d), b = detail::dbl(key_block < n ? key_block : n);
  return {2 * nn * nn * dd, (nn * b + nn * dd + 2 * nn) * static_cast<double>(scalar_bytes)};
}

// Efficient attention (Shen): softmax_col(K)^T V and softmax_row(Q) ctx, n d^2 each (plus 2 n d exp);
// softmax_row(Q) and softmax_col(K) with their exponentials (n x d each, two at a time), the d x d
// context, and the row maxima and sums (2 n).
inline AttentionCost efficient_attention_cost(long long n, long long d, std::size_t scalar_bytes) {
  const double nn = detail::dbl(n), dd = detail::dbl(d);
  return {2 * nn * dd * dd, (3 * nn * dd + dd * dd + 2 * nn) * static_cast<double>(scalar_bytes)};
}

// elu + 1 linear attention: phi(K)^T V and phi(Q) kv (n d^2 each) and the denominators phi(Q) ksum (n d);
// phi(Q), phi(K) (n x d), kv (d x d), ksum (d), numerator (n x d), denominators (n).
inline AttentionCost elu_linear_attention_cost(long long n, long long d, std::size_t scalar_bytes) {
  const double nn = detail::dbl(n), dd = detail::dbl(d);
  return {2 * nn * dd * dd + nn * dd, (3 * nn * dd + dd * dd + dd + nn) * static_cast<double>(scalar_bytes)};
}

// Linformer with sequence-axis projections to k rows (k <= n), counted in full: E K, F V (k n d and k n d_v)
// and the products with the n x k scores (n k d and n k d_v); n k exponentials; workspace E K, F V, the
// n x k scores and the output; inputs Q, K, V and E, F.
struct LinformerCost {
  double multiply_adds = 0;    // k n d + k n dv + n k d + n k dv
  double exponentials = 0;     // n k
  double workspace_bytes = 0;  // buffers the kernel allocates: E K, F V, the n x k scores, the output
  double input_bytes = 0;      // Q, K, V and E, F
};
inline LinformerCost linformer_cost(long long n, long long d, long long dv, long long k, std::size_t scalar_bytes) {
  const double N = detail::dbl(n), D = detail::dbl(d), DV = detail::dbl(dv), K = detail::dbl(k),
               B = static_cast<double>(scalar_bytes);
  LinformerCost c;
  c.multiply_adds = K * N * D + K * N * DV + N * K * D + N * K * DV;
  c.exponentials = N * K;
  c.workspace_bytes = B * (K * D + K * DV + N * K + N * DV);
  c.input_bytes = B * (2 * N * D + N * DV + 2 * K * N);
  return c;
}
// The same in this header's common form (d = d_v).
inline AttentionCost linformer_attention_cost(long long n, long long d, long long k, std::size_t scalar_bytes) {
  const LinformerCost c = linformer_cost(n, d, d, k, scalar_bytes);
  return {c.multiply_adds, c.workspace_bytes};
}

// Random Fourier features with D directions: projections of Q and K (n D d each, plus 4 n D sin/cos),
// phi(K)^T V and phi(Q) ctx (2 n D d each), denominators (2 n D); features 2 x (n x 2D) plus the
// two n x D projections, ctx (2D x d), z (2D), numerator (n x d), denominators (n).
inline AttentionCost random_fourier_attention_cost(long long n, long long d, long long D, std::size_t scalar_bytes) {
  const double nn = detail::dbl(n), dd = detail::dbl(d), ff = detail::dbl(D);
  return {6 * nn * ff * dd + 2 * nn * ff,
          (6 * nn * ff + 2 * ff * dd + 2 * ff + nn * dd + nn) * static_cast<double>(scalar_bytes)};
}

// FAVOR+ with D features: projections (n D d each), phi(K)^T V and phi(Q) ctx (n D d each), the
// denominators (n D); exponents and features of Q and K (4 x n x D), ctx (D x d), ksum (D),
// numerator (n x d), denominators (n).
inline AttentionCost favor_attention_cost(long long n, long long d, long long D, std::size_t scalar_bytes) {
  const double nn = detail::dbl(n), dd = detail::dbl(d), ff = detail::dbl(D);
  return {4 * nn * ff * dd + nn * ff,
          (4 * nn * ff + ff * dd + 2 * ff + nn * dd + nn) * static_cast<double>(scalar_bytes)};
}

// Nystrom with m landmarks: F (n m d), A (m^2 d), B (m n d), B V (m n d), Z (B V) (m^2 d), F (Z B V)
// (n m d); the pseudoinverse costs 4 m^3 per iteration (four m x m products) or, by SVD, about
// 12 m^3 (Golub & Van Loan's count for U, S, V of a square matrix; pass iterations = -1).
// Landmarks (2 m x d), F (n x m), A, Z and two m x m iteration temporaries, B (m x n), B V and Z B V (m x d).
inline AttentionCost nystrom_attention_cost(long long n, long long d, long long m, int iterations,
                                            std::size_t scalar_bytes) {
  const double nn = detail::dbl(n), dd = detail::dbl(d), mm = detail::dbl(m);
  const double pinv = iterations < 0 ? 12 * mm * mm * mm : 4 * mm * mm * mm * iterations;
  return {4 * nn * mm * dd + 2 * mm * mm * dd + pinv,
          (2 * mm * dd + 2 * nn * mm + 4 * mm * mm + 2 * mm * dd) * static_cast<double>(scalar_bytes)};
}

}  // namespace attnlab
