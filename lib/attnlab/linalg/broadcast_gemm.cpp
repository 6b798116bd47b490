// The float kernel of broadcast_gemm.hpp: AVX-512, a 64 x 6 tile of C held in 24 registers.
#include "attnlab/linalg/broadcast_gemm.hpp"

#include <algorithm>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace attnlab::detail {

#if defined(__AVX512F__)

namespace {

// Columns of C per tile. 64 rows x 6 columns = 24 accumulators, plus 4 for A's column and 1 for the
// broadcast: 29 of the 32 vector registers. Side by side on one core (2026-11-27, 64 x n x d and
// 64 x d x n, n 1024-2048, d 32-64): 6 columns 100-111 GFLOP/s, 4 columns 78-90, 8 columns 97-109
// (spills), 7 columns 95-103.
constexpr int kTileCols = 6;
constexpr Eigen::Index kTileRows = 64;

// Lanes [0, rows) of a 16-lane vector, for the last (partial) vectors of a tile.
__mmask16 lane_mask(Eigen::Index rows) {
  if (rows <= 0) return 0;
  if (rows >= 16) return 0xFFFF;
  return static_cast<__mmask16>((1u << rows) - 1);
}

// C(0:rows, 0:NR) (+)= A(0:rows, 0:k) B(0:k, 0:NR), rows <= 64 given by the four lane masks. Step p loads
// A's column p (four vectors) and broadcasts B(p, 0..NR-1): NR x 4 independent FMAs per step, summed in
// the order p = 0, 1, ..., k - 1. Masked-off lanes load zeros and are never stored.
template <int NR>
void tile(const float* a, Eigen::Index lda, const float* b, Eigen::Index rsb, Eigen::Index csb, Eigen::Index k,
          float* c, Eigen::Index ldc, const __mmask16 (&mask)[4], bool accumulate) {
  __m512 s0[NR], s1[NR], s2[NR], s3[NR];
  for (int j = 0; j < NR; ++j) s0[j] = s1[j] = s2[j] = s3[j] = _mm512_setzero_ps();
  for (Eigen::Index p = 0; p < k; ++p) {
    const float* ap = a + p * lda;
    const __m512 a0 = _mm512_maskz_loadu_ps(mask[0], ap), a1 = _mm512_maskz_loadu_ps(mask[1], ap + 16),
                 a2 = _mm512_maskz_loadu_ps(mask[2], ap + 32), a3 = _mm512_maskz_loadu_ps(mask[3], ap + 48);
    const float* bp = b + p * rsb;
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      const __m512 bj = _mm512_set1_ps(bp[j * csb]);
      s0[j] = _mm512_fmadd_ps(a0, bj, s0[j]);
      s1[j] = _mm512_fmadd_ps(a1, bj, s1[j]);
      s2[j] = _mm512_fmadd_ps(a2, bj, s2[j]);
      s3[j] = _mm512_fmadd_ps(a3, bj, s3[j]);
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < NR; ++j) {
    float* cj = c + j * ldc;
    if (accumulate) {
      s0[j] = _mm512_add_ps(_mm512_maskz_loadu_ps(mask[0], cj), s0[j]);
      s1[j] = _mm512_add_ps(_mm512_maskz_loadu_ps(mask[1], cj + 16), s1[j]);
      s2[j] = _mm512_add_ps(_mm512_maskz_loadu_ps(mask[2], cj + 32), s2[j]);
      s3[j] = _mm512_add_ps(_mm512_maskz_loadu_ps(mask[3], cj + 48), s3[j]);
    }
    _mm512_mask_storeu_ps(cj, mask[0], s0[j]);
    _mm512_mask_storeu_ps(cj + 16, mask[1], s1[j]);
    _mm512_mask_storeu_ps(cj + 32, mask[2], s2[j]);
    _mm512_mask_storeu_ps(cj + 48, mask[3], s3[j]);
  }
}

using TileFn = void (*)(const float*, Eigen::Index, const float*, Eigen::Index, Eigen::Index, Eigen::Index, float*,
                        Eigen::Index, const __mmask16 (&)[4], bool);
// The last columns of C (n mod 6 of them) by a narrower tile, so that B is never read past its last column.
constexpr TileFn kTiles[kTileCols + 1] = {nullptr, tile<1>, tile<2>, tile<3>, tile<4>, tile<5>, tile<6>};

}  // namespace

void broadcast_sgemm(Eigen::Index m, Eigen::Index n, Eigen::Index k, const float* a, Eigen::Index lda,
                     const StridedView<float>& b, float* c, Eigen::Index ldc, bool accumulate) {
  for (Eigen::Index i0 = 0; i0 < m; i0 += kTileRows) {
    const Eigen::Index rows = m - i0;
    const __mmask16 mask[4] = {lane_mask(rows), lane_mask(rows - 16), lane_mask(rows - 32), lane_mask(rows - 48)};
    // ceil(n / 6) tiles as even as they can be (n = 32: 5, 5, 5, 5, 6, 6 rather than five of 6 and one of 2:
    // a narrow tile does as many loads of A per FMA as it has columns fewer).
    const Eigen::Index tiles = (n + kTileCols - 1) / kTileCols, base = n / std::max<Eigen::Index>(tiles, 1),
                       wider = n - tiles * base;  // the last `wider` tiles take base + 1 columns (base + 1 <= 6)
    for (Eigen::Index t = 0, j0 = 0; t < tiles; ++t) {
      const auto cols = static_cast<int>(t < tiles - wider ? base : base + 1);
      kTiles[cols](a + i0, lda, b.data + j0 * b.col_stride, b.row_stride, b.col_stride, k, c + i0 + j0 * ldc, ldc,
                   mask, accumulate);
      j0 += cols;
    }
  }
}

bool broadcast_sgemm_available() { return true; }

#else

void broadcast_sgemm(Eigen::Index, Eigen::Index, Eigen::Index, const float*, Eigen::Index, const StridedView<float>&,
                     float*, Eigen::Index, bool) {
  eigen_assert(false && "broadcast_sgemm: built without AVX-512 (broadcast_gemm falls back to Eigen)");
}

bool broadcast_sgemm_available() { return false; }

#endif

}  // namespace attnlab::detail
