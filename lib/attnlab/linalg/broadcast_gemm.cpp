// The float kernel of broadcast_gemm.hpp: AVX-512, a 64 x 6 tile of C held in 24 registers.
#include "attnlab/linalg/broadcast_gemm.hpp"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace attnlab::detail {

#if defined(__AVX512F__)

namespace {

// A tile of C is MR vectors of 16 rows by NR columns: MR x NR accumulators, plus MR for A's column and 1 for
// the broadcast. 64 rows x 6 columns = 24 accumulators: 29 of the 32 vector registers. Side by side on one
// core (2026-11-27, 64 x n x d and 64 x d x n, n 1024-2048, d 32-64): 6 columns 100-111 GFLOP/s, 4 columns
// 78-90, 8 columns 97-109 (spills), 7 columns 95-103. Panels of at most 32 rows (the 32 x 32 summaries of
// the linear kernels at d = 32) take 32 x 12 tiles, the same 24 accumulators, instead of 64-row tiles with
// half their lanes masked off.
constexpr int kTileCols = 6;
constexpr int kNarrowTileCols = 12;
constexpr Eigen::Index kTileRows = 64;

// Lanes [0, rows) of a 16-lane vector, for the last (partial) vectors of a tile.
__mmask16 lane_mask(Eigen::Index rows) {
  if (rows <= 0) return 0;
  if (rows >= 16) return 0xFFFF;
  return static_cast<__mmask16>((1u << rows) - 1);
}

// C(0:rows, 0:NR) (+)= A(0:rows, 0:k) B(0:k, 0:NR), rows <= 16 MR given by the MR lane masks. Step p loads
// A's column p (MR vectors) and broadcasts B(p, 0..NR-1): NR x MR independent FMAs per step, each entry
// summed in the order p = 0, 1, ..., k - 1 from zero (then added to C when accumulating), whatever the
// tile's shape. Masked-off lanes load zeros and are never stored.
template <int MR, int NR>
void tile(const float* a, Eigen::Index lda, const float* b, Eigen::Index rsb, Eigen::Index csb, Eigen::Index k,
          float* c, Eigen::Index ldc, const __mmask16* mask, bool accumulate) {
  __m512 s[NR][MR];
#pragma GCC unroll 16
  for (int j = 0; j < NR; ++j)
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) s[j][i] = _mm512_setzero_ps();
  for (Eigen::Index p = 0; p < k; ++p) {
    const float* ap = a + p * lda;
    __m512 av[MR];
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) av[i] = _mm512_maskz_loadu_ps(mask[i], ap + 16 * i);
    const float* bp = b + p * rsb;
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j) {
      const __m512 bj = _mm512_set1_ps(bp[j * csb]);
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i) s[j][i] = _mm512_fmadd_ps(av[i], bj, s[j][i]);
    }
  }
#pragma GCC unroll 16
  for (int j = 0; j < NR; ++j) {
    float* cj = c + j * ldc;
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      if (accumulate) s[j][i] = _mm512_add_ps(_mm512_maskz_loadu_ps(mask[i], cj + 16 * i), s[j][i]);
      _mm512_mask_storeu_ps(cj + 16 * i, mask[i], s[j][i]);
    }
  }
}

using TileFn = void (*)(const float*, Eigen::Index, const float*, Eigen::Index, Eigen::Index, Eigen::Index, float*,
                        Eigen::Index, const __mmask16*, bool);
// Tiles by width, so that the last columns of C are covered without reading B past its last column.
template <int MR, int... NR>
constexpr std::array<TileFn, sizeof...(NR) + 1> tiles_of(std::integer_sequence<int, NR...>) {
  return {nullptr, tile<MR, NR + 1>...};
}
constexpr auto kTiles = tiles_of<4>(std::make_integer_sequence<int, kTileCols>{});
constexpr auto kNarrowTiles = tiles_of<2>(std::make_integer_sequence<int, kNarrowTileCols>{});

// One panel of up to 64 rows of C: C(0:rows, 0:n) (+)= A(0:rows, 0:k) B, the columns in ceil(n / width) tiles
// as even as they can be (n = 32, width 6: 5, 5, 5, 5, 6, 6 rather than five of 6 and one of 2: a narrow tile
// does as many loads of A per FMA as it has columns fewer).
void panel(Eigen::Index rows, Eigen::Index n, Eigen::Index k, const float* a, Eigen::Index lda, const StridedView<float>& b,
           float* c, Eigen::Index ldc, bool accumulate) {
  const __mmask16 mask[4] = {lane_mask(rows), lane_mask(rows - 16), lane_mask(rows - 32), lane_mask(rows - 48)};
  const bool narrow = rows <= 32;
  const Eigen::Index width = narrow ? kNarrowTileCols : kTileCols;
  const Eigen::Index tiles = (n + width - 1) / width, base = n / std::max<Eigen::Index>(tiles, 1),
                     wider = n - tiles * base;  // the last `wider` tiles take base + 1 columns (base + 1 <= width)
  for (Eigen::Index t = 0, j0 = 0; t < tiles; ++t) {
    const auto cols = static_cast<std::size_t>(t < tiles - wider ? base : base + 1);
    (narrow ? kNarrowTiles[cols] : kTiles[cols])(a, lda, b.data + j0 * b.col_stride, b.row_stride, b.col_stride, k,
                                                 c + j0 * ldc, ldc, mask, accumulate);
    j0 += static_cast<Eigen::Index>(cols);
  }
}

// The 16 x 16 block r[0..15] (r[q] holds 16 entries of column q) transposed in registers: afterwards r[t]
// holds entry t of every former r[q], in lanes q. Four rounds of 16 shuffles: 32-bit pairs, 64-bit pairs,
// then the 4 x 4 transpose of 128-bit quarters in two rounds.
void transpose16(__m512 (&r)[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {  // t[2i], t[2i+1]: entries (0, 1) and (2, 3) of each quarter, rows 2i and 2i + 1 interleaved
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  __m512 u[16];  // u[4j + e]: quarter L holds entry 4L + e of rows 4j .. 4j + 3
  for (int j = 0; j < 4; ++j) {
    const __m512d t0 = _mm512_castps_pd(t[4 * j]), t1 = _mm512_castps_pd(t[4 * j + 1]),
                  t2 = _mm512_castps_pd(t[4 * j + 2]), t3 = _mm512_castps_pd(t[4 * j + 3]);
    u[4 * j] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
    u[4 * j + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
    u[4 * j + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
    u[4 * j + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
  }
  for (int e = 0; e < 4; ++e) {  // entry 4L + e of every row: quarter L of u[e], u[4 + e], u[8 + e], u[12 + e]
    const __m512 v0 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0x88), v1 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0xdd),
                 v2 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0x88), v3 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0xdd);
    r[e] = _mm512_shuffle_f32x4(v0, v2, 0x88);
    r[8 + e] = _mm512_shuffle_f32x4(v0, v2, 0xdd);
    r[4 + e] = _mm512_shuffle_f32x4(v1, v3, 0x88);
    r[12 + e] = _mm512_shuffle_f32x4(v1, v3, 0xdd);
  }
}

// packed (64 x k, leading dimension 64) = the transpose of a(0:k, 0:cols), cols <= 64, a's columns contiguous
// (leading dimension lda). Rows cols..63 of packed are left unwritten where a whole group of 16 is past cols,
// and zero within the last group; the tiles never read them (their lane masks).
void pack_transposed(const float* a, Eigen::Index lda, Eigen::Index k, Eigen::Index cols, float* packed) {
  __m512 r[16];
  for (Eigen::Index r0 = 0; r0 < cols; r0 += 16) {
    const Eigen::Index rq = std::min<Eigen::Index>(16, cols - r0);
    for (Eigen::Index p0 = 0; p0 < k; p0 += 16) {
      const Eigen::Index pk = std::min<Eigen::Index>(16, k - p0);
      const __mmask16 mp = lane_mask(pk);
      for (Eigen::Index q = 0; q < 16; ++q)
        r[q] = q < rq ? _mm512_maskz_loadu_ps(mp, a + (r0 + q) * lda + p0) : _mm512_setzero_ps();
      transpose16(r);
      for (Eigen::Index t = 0; t < pk; ++t) _mm512_storeu_ps(packed + (p0 + t) * kTileRows + r0, r[t]);
    }
  }
}

}  // namespace

void broadcast_sgemm(Eigen::Index m, Eigen::Index n, Eigen::Index k, const float* a, Eigen::Index lda,
                     const StridedView<float>& b, float* c, Eigen::Index ldc, bool accumulate) {
  for (Eigen::Index i0 = 0; i0 < m; i0 += kTileRows)
    panel(std::min(kTileRows, m - i0), n, k, a + i0, lda, b, c + i0, ldc, accumulate);
}

void broadcast_sgemm_tn(Eigen::Index m, Eigen::Index n, Eigen::Index k, const float* a, Eigen::Index lda,
                        const StridedView<float>& b, float* c, Eigen::Index ldc, bool accumulate) {
  // Each panel of 64 columns of A is transposed once into a buffer of this thread's (64 x k floats, kept
  // between calls), then multiplied as broadcast_sgemm multiplies: the same tiles, the same order of sums.
  thread_local std::vector<float> packed;
  const auto needed = static_cast<std::size_t>(kTileRows * std::max<Eigen::Index>(k, 1));
  if (packed.size() < needed) packed.resize(needed);  // only grown: a shorter call after a longer one costs nothing
  for (Eigen::Index i0 = 0; i0 < m; i0 += kTileRows) {
    const Eigen::Index rows = std::min(kTileRows, m - i0);
    pack_transposed(a + i0 * lda, lda, k, rows, packed.data());
    panel(rows, n, k, packed.data(), kTileRows, b, c + i0, ldc, accumulate);
  }
}

bool broadcast_sgemm_available() { return true; }

#else

void broadcast_sgemm(Eigen::Index, Eigen::Index, Eigen::Index, const float*, Eigen::Index, const StridedView<float>&,
                     float*, Eigen::Index, bool) {
  eigen_assert(false && "broadcast_sgemm: built without AVX-512 (broadcast_gemm falls back to Eigen)");
}

void broadcast_sgemm_tn(Eigen::Index, Eigen::Index, Eigen::Index, const float*, Eigen::Index, const StridedView<float>&,
                        float*, Eigen::Index, bool) {
  eigen_assert(false && "broadcast_sgemm_tn: built without AVX-512 (broadcast_gemm_tn falls back to Eigen)");
}

bool broadcast_sgemm_available() { return false; }

#endif

}  // namespace attnlab::detail
