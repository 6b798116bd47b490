// NumPy arrays as head stacks, matrices and weights (arrays.hpp).
#include "arrays.hpp"

#include <Eigen/Core>
#if defined(__AVX__)
#include <immintrin.h>
#endif
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <omp.h>
#include <stdexcept>
#include <type_traits>

#include "attnlab/core/finite.hpp"
#include "attnlab/io/npy.hpp"

namespace attnlab::python {

namespace {

// The transposing copies between NumPy's C order and the kernels' column-major heads go through tiles of
// kTile x kTile values, small enough to stay in L1.
constexpr Eigen::Index kTile = 16;

#if defined(__AVX__)
// d[j ld + i] = s[i ls + j] for an 8 x 8 block of floats: rows interleaved in pairs, then in fours, then the 128-bit
// halves exchanged (the classic three-stage register transpose). `nonfinite` gathers r - r of every row loaded: 0
// for a finite value, NaN for an infinity or a NaN, and NaN stays NaN under addition, so the copy checks its values
// while they are in registers instead of reading the destination again.
inline void transpose_block(const float* s, std::int64_t ls, float* d, std::int64_t ld, __m256& nonfinite) {
  __m256 r[8], t[8], u[8];
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm256_loadu_ps(s + i * ls);
    nonfinite = _mm256_add_ps(nonfinite, _mm256_sub_ps(r[i], r[i]));
  }
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int j = 0; j < 4; ++j) {
    _mm256_storeu_ps(d + j * ld, _mm256_permute2f128_ps(u[j], u[j + 4], 0x20));
    _mm256_storeu_ps(d + (j + 4) * ld, _mm256_permute2f128_ps(u[j], u[j + 4], 0x31));
  }
}

// The same for a 4 x 4 block of doubles: pairs interleaved, then the 128-bit halves exchanged.
inline void transpose_block(const double* s, std::int64_t ls, double* d, std::int64_t ld, __m256d& nonfinite) {
  __m256d r[4];
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_loadu_pd(s + i * ls);
    nonfinite = _mm256_add_pd(nonfinite, _mm256_sub_pd(r[i], r[i]));
  }
  const __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]), t1 = _mm256_unpackhi_pd(r[0], r[1]);
  const __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]), t3 = _mm256_unpackhi_pd(r[2], r[3]);
  _mm256_storeu_pd(d, _mm256_permute2f128_pd(t0, t2, 0x20));
  _mm256_storeu_pd(d + ld, _mm256_permute2f128_pd(t1, t3, 0x20));
  _mm256_storeu_pd(d + 2 * ld, _mm256_permute2f128_pd(t0, t2, 0x31));
  _mm256_storeu_pd(d + 3 * ld, _mm256_permute2f128_pd(t1, t3, 0x31));
}

// Whether every lane of a block's gathered r - r is 0 (ordered: not NaN), i.e. every value it loaded was finite.
inline bool all_ordered(__m256 x) { return _mm256_movemask_ps(_mm256_cmp_ps(x, x, _CMP_ORD_Q)) == 0xFF; }
inline bool all_ordered(__m256d x) { return _mm256_movemask_pd(_mm256_cmp_pd(x, x, _CMP_ORD_Q)) == 0xF; }
#endif

// One transposing copy, or a band of one: dst (column-major, rows x cols, leading dimension rows) = the matrix
// whose (i, j) is src[i row + j col], for the rows [row_begin, row_end) only.
template <typename T>
struct Transpose {
  const T* src;
  std::int64_t row, col;
  Eigen::Index rows, cols;
  T* dst;
  Eigen::Index row_begin, row_end;
  std::size_t owner;  // which input or output it belongs to

  // Contiguous source rows (col 1) of floats or doubles, where the CPU has AVX: blocks of 8 x 8 floats (4 x 4
  // doubles) transposed in registers, a block column at a time, so that each of the block's destination columns is
  // written along itself, block after block (two and a half times faster than the tiles below on a cold 2048 x 64
  // float head: 48 against 120 us). The blocks' edges, and strided sources, go through the tiles.
  // With `check`, returns whether every value of the band is finite (without, true).
  bool run(bool check) const {
#if defined(__AVX__)
    if (col == 1) {
      constexpr Eigen::Index b = std::is_same_v<T, float> ? 8 : 4;
      const Eigen::Index i_end = row_begin + (row_end - row_begin) / b * b, j_end = cols / b * b;
      const auto blocks = [&](auto nonfinite) {  // nonfinite: a zero register of T's lanes
        for (Eigen::Index j0 = 0; j0 < j_end; j0 += b)
          for (Eigen::Index i0 = row_begin; i0 < i_end; i0 += b)
            transpose_block(src + i0 * row + j0, row, dst + j0 * rows + i0, rows, nonfinite);
        return all_ordered(nonfinite);
      };
      bool blocks_finite;
      if constexpr (std::is_same_v<T, float>) blocks_finite = blocks(_mm256_setzero_ps());
      else blocks_finite = blocks(_mm256_setzero_pd());
      // What is left: the rows past the last whole block (all columns), and the columns past it (the block rows).
      tiles(i_end, row_end, 0, cols);
      tiles(row_begin, i_end, j_end, cols);
      return !check || (blocks_finite && finite_in(i_end, row_end, 0, cols) && finite_in(row_begin, i_end, j_end, cols));
    }
#endif
    tiles(row_begin, row_end, 0, cols);
    return !check || finite_in(row_begin, row_end, 0, cols);
  }

  // Rows [i_begin, i_end) and columns [j_begin, j_end), tile by tile through a small buffer in L1: each tile's rows
  // read along the source, its columns written along the destination (an element-by-element transpose reads across
  // the source's rows, or writes across the destination's: 1.9 ms for three 2048 x 64 floats, against 0.2 ms).
  void tiles(Eigen::Index i_begin, Eigen::Index i_end, Eigen::Index j_begin, Eigen::Index j_end) const {
    T tile[kTile][kTile];
    for (Eigen::Index i0 = i_begin; i0 < i_end; i0 += kTile) {
      const Eigen::Index bi = std::min(kTile, i_end - i0);
      for (Eigen::Index j0 = j_begin; j0 < j_end; j0 += kTile) {
        const Eigen::Index bj = std::min(kTile, j_end - j0);
        for (Eigen::Index i = 0; i < bi; ++i) {
          const T* r = src + (i0 + i) * row + j0 * col;
          for (Eigen::Index j = 0; j < bj; ++j) tile[j][i] = r[j * col];
        }
        for (Eigen::Index j = 0; j < bj; ++j) std::copy(tile[j], tile[j] + bi, dst + (j0 + j) * rows + i0);
      }
    }
  }

  // Whether the values copied to rows [i_begin, i_end) and columns [j_begin, j_end) are all finite (read back from
  // the destination, still in cache).
  bool finite_in(Eigen::Index i_begin, Eigen::Index i_end, Eigen::Index j_begin, Eigen::Index j_end) const {
    if (i_end <= i_begin) return true;
    for (Eigen::Index j = j_begin; j < j_end; ++j)
      if (!all_finite(dst + j * rows + i_begin, static_cast<std::size_t>(i_end - i_begin))) return false;
    return true;
  }
};

// Runs the copies in one parallel region (whose start alone wakes the runtime's threads: microseconds, so none for a
// small call). When the copies do not divide evenly among the threads (attend's three inputs on two threads: one
// thread would copy two heads while the other waits after one), each is cut into as many bands as there are
// threads, so that every thread copies the same number of rows. With `check`, returns for each of the `owners`
// whether every value copied for it is finite.
template <typename T>
std::vector<int> run_transposes(std::vector<Transpose<T>> copies, std::size_t owners, bool check) {
  const int threads = omp_get_max_threads();
  Eigen::Index values = 0;
  for (const Transpose<T>& c : copies) values += c.rows * c.cols;
  const bool parallel = threads > 1 && values >= (1 << 16);
  if (parallel && copies.size() % static_cast<std::size_t>(threads) != 0) {
    const auto parts = static_cast<Eigen::Index>(threads);
    std::vector<Transpose<T>> bands;
    for (const Transpose<T>& c : copies) {
      const Eigen::Index tiles = (c.rows + kTile - 1) / kTile, per = (tiles + parts - 1) / parts;
      for (Eigen::Index t = 0; t < tiles; t += per) {
        Transpose<T> band = c;
        band.row_begin = t * kTile;
        band.row_end = std::min(c.rows, (t + per) * kTile);
        bands.push_back(band);
      }
    }
    copies = std::move(bands);
  }
  std::vector<int> finite(copies.size(), 1);
  const auto one = [&](std::size_t i) { finite[i] = copies[i].run(check); };
  if (parallel) {
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < copies.size(); ++i) one(i);
  } else {
    for (std::size_t i = 0; i < copies.size(); ++i) one(i);
  }
  std::vector<int> owner_finite(owners, 1);
  for (std::size_t i = 0; i < copies.size(); ++i)
    if (!finite[i]) owner_finite[copies[i].owner] = 0;
  return owner_finite;
}

std::string dtype_str(const py::array& a) { return py::str(a.dtype().attr("str")); }

}  // namespace

py::array readable(py::handle obj, bool& copied) {
  copied = false;
  py::array a = py::isinstance<py::array>(obj) ? py::reinterpret_borrow<py::array>(obj)
                                               : py::array(py::module_::import("numpy").attr("asarray")(obj));
  const auto item = static_cast<std::int64_t>(a.itemsize());
  bool in_place = item > 0 && reinterpret_cast<std::uintptr_t>(a.data()) % static_cast<std::uintptr_t>(item) == 0;
  for (py::ssize_t i = 0; i < a.ndim(); ++i)
    if (a.shape(i) > 1 && (a.strides(i) < 0 || a.strides(i) % item != 0)) in_place = false;
  if (!in_place) {
    a = py::array(py::module_::import("numpy").attr("ascontiguousarray")(a));
    copied = true;
  }
  return a;
}

StackView stack_view(py::handle obj, const std::string& label, py::array& keep) {
  StackView v;
  v.shape.label = label;
  keep = readable(obj, v.copied);
  if (const std::string problem = npy_dtype_problem(dtype_str(keep)); !problem.empty()) v.shape.refuse(problem);
  if (const std::string problem = npy_dims_problem(static_cast<std::size_t>(keep.ndim())); !problem.empty()) v.shape.refuse(problem);
  for (py::ssize_t i = 0; i < keep.ndim(); ++i) v.given.push_back(static_cast<std::size_t>(keep.shape(i)));
  if (const std::string problem = head_stack_shape_problem(v.given); !problem.empty()) v.shape.refuse(problem);
  const std::vector<std::size_t> full = head_stack_shape(v.given);
  v.shape.batch = static_cast<Eigen::Index>(full[0]);
  v.shape.heads = static_cast<Eigen::Index>(full[1]);
  v.shape.n = static_cast<Eigen::Index>(full[2]);
  v.shape.d = static_cast<Eigen::Index>(full[3]);
  const std::size_t missing = 4 - v.given.size();  // leading axes of length 1: stride 0
  for (std::size_t i = 0; i < v.given.size(); ++i) v.strides[missing + i] = keep.strides(static_cast<py::ssize_t>(i));
  v.data = static_cast<const unsigned char*>(keep.data());
  v.is_double = keep.itemsize() == 8;
  return v;
}

namespace {

// The refusal of a non-finite input value at head h, row r, column j, named in C order as the reader names it (the
// flat index of the array as given).
[[noreturn]] void refuse_nonfinite(const StackView& view, Eigen::Index h, Eigen::Index r, Eigen::Index j, double value) {
  const AttendInput& s = view.shape;
  s.refuse(npy_nonfinite_problem(value, static_cast<std::size_t>((h * s.n + r) * s.d + j), view.given));
}

}  // namespace

template <typename T>
bool rows_in_c_order(const std::vector<StackView>& views) {
  for (const StackView& v : views)
    if ((v.shape.d > 1 && v.strides[3] != static_cast<std::int64_t>(sizeof(T))) ||
        (v.shape.n > 1 && v.strides[2] != static_cast<std::int64_t>(v.shape.d * static_cast<Eigen::Index>(sizeof(T)))))
      return false;
  return true;
}

template <typename T>
std::vector<const T*> head_pointers(const StackView& view) {
  std::vector<const T*> heads;
  for (Eigen::Index h = 0; h < view.shape.count(); ++h)
    heads.push_back(reinterpret_cast<const T*>(view.data + (h / view.shape.heads) * view.strides[0] +
                                               (h % view.shape.heads) * view.strides[1]));
  return heads;
}

template <typename T>
void check_finite_in_place(const std::vector<StackView>& views) {
  for (const StackView& v : views) {
    const std::vector<const T*> heads = head_pointers<T>(v);
    const auto size = static_cast<std::size_t>(v.shape.n * v.shape.d);
    for (Eigen::Index h = 0; h < v.shape.count(); ++h) {
      const T* x = heads[static_cast<std::size_t>(h)];
      if (all_finite(x, size)) continue;
      for (std::size_t e = 0; e < size; ++e)
        if (!std::isfinite(x[e]))
          refuse_nonfinite(v, h, static_cast<Eigen::Index>(e) / v.shape.d, static_cast<Eigen::Index>(e) % v.shape.d, static_cast<double>(x[e]));
    }
  }
}

template bool rows_in_c_order<float>(const std::vector<StackView>&);
template bool rows_in_c_order<double>(const std::vector<StackView>&);
template std::vector<const float*> head_pointers(const StackView&);
template std::vector<const double*> head_pointers(const StackView&);
template void check_finite_in_place<float>(const std::vector<StackView>&);
template void check_finite_in_place<double>(const std::vector<StackView>&);

// The calling thread's buffers, and whether a HeadStacks holds them.
template <typename T>
struct KeptStacks {
  std::vector<HeadStack<T>> slots;
  bool in_use = false;
};

template <typename T>
KeptStacks<T>& kept_stacks() {
  thread_local KeptStacks<T> kept;
  return kept;
}

template <typename T>
std::size_t bytes_of(const KeptStacks<T>& kept) {
  std::size_t bytes = 0;
  for (const HeadStack<T>& s : kept.slots) bytes += static_cast<std::size_t>(s.count() * s.n() * s.d()) * sizeof(T);
  return bytes;
}

// Releases the buffers when they hold more than HeadStacks' kKeptBytes in all.
template <typename T>
void trim(KeptStacks<T>& kept) {
  if (bytes_of(kept) > HeadStacks<T>::kKeptBytes) kept.slots.clear();
}

template <typename T>
HeadStacks<T>::HeadStacks(const std::vector<StackView>& views) {
  KeptStacks<T>& kept = kept_stacks<T>();
  if (kept.in_use) throw std::logic_error("HeadStacks: a second set of stacks in one thread");
  std::vector<HeadStack<T>>& slots = kept.slots;
  if (slots.size() < views.size()) slots.resize(views.size());
  std::vector<Transpose<T>> copies;
  for (std::size_t i = 0; i < views.size(); ++i) {
    const AttendInput& s = views[i].shape;
    HeadStack<T>& slot = slots[i];
    // Another shape: the old buffer goes before the new one is made, so that the two are never held at once.
    if (slot.batch() != s.batch || slot.heads() != s.heads || slot.n() != s.n || slot.d() != s.d) {
      slot = HeadStack<T>();
      slot = HeadStack<T>::uninitialized(s.batch, s.heads, s.n, s.d);
    }
    const std::int64_t row = views[i].strides[2] / static_cast<std::int64_t>(sizeof(T));
    const std::int64_t col = views[i].strides[3] / static_cast<std::int64_t>(sizeof(T));
    // Each head's (n, d) block, row-major with the array's strides, into a column-major matrix: the transposing
    // copy attend makes from its file.
    const std::vector<const T*> heads = head_pointers<T>(views[i]);
    for (Eigen::Index h = 0; h < s.count(); ++h)
      copies.push_back({heads[static_cast<std::size_t>(h)], row, col, s.n, s.d, slot[h].data(), 0, s.n, i});
  }
  const std::vector<int> finite = run_transposes(std::move(copies), views.size(), true);
  for (std::size_t i = 0; i < views.size(); ++i) {
    if (finite[i]) continue;
    // The first non-finite value in C order, as the reader names it (the flat index of the array as given).
    const AttendInput& s = views[i].shape;
    const HeadStack<T>& stack = slots[i];
    for (Eigen::Index h = 0; h < s.count(); ++h)
      for (Eigen::Index r = 0; r < s.n; ++r)
        for (Eigen::Index j = 0; j < s.d; ++j)
          if (!std::isfinite(stack[h](r, j))) {
            trim(kept);  // the destructor does not run when the constructor throws
            refuse_nonfinite(views[i], h, r, j, static_cast<double>(stack[h](r, j)));
          }
  }
  slots_ = &slots;
  kept.in_use = true;
}

template <typename T>
HeadStacks<T>::~HeadStacks() {
  KeptStacks<T>& kept = kept_stacks<T>();
  kept.in_use = false;
  trim(kept);
}

std::size_t kept_stack_bytes() { return bytes_of(kept_stacks<float>()) + bytes_of(kept_stacks<double>()); }

template <typename T>
py::array_t<T> new_output(const std::vector<std::size_t>& leading, Eigen::Index n, Eigen::Index d) {
  std::vector<py::ssize_t> shape(leading.begin(), leading.end());
  shape.push_back(static_cast<py::ssize_t>(n));
  shape.push_back(static_cast<py::ssize_t>(d));
  return py::array_t<T>(shape);
}

template <typename T>
void write_head_stacks(const std::vector<std::pair<const HeadStack<T>*, T*>>& outputs) {
  std::vector<Transpose<T>> copies;
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    const HeadStack<T>& stack = *outputs[o].first;
    const Eigen::Index n = stack.n(), d = stack.d();
    // The (n, d) C-order block is the column-major d x n matrix whose (j, i) is the head's (i, j) = data[j n + i].
    for (Eigen::Index h = 0; h < stack.count(); ++h) copies.push_back({stack[h].data(), n, 1, d, n, outputs[o].second + h * n * d, 0, d, o});
  }
  run_transposes(std::move(copies), outputs.size(), false);
}

Mat<double> draw_matrix(py::handle obj, const std::string& name) {
  bool copied = false;
  const py::array a = readable(obj, copied);
  if (const std::string problem = npy_dtype_problem(dtype_str(a)); !problem.empty()) throw NpyError(name + ": " + problem);
  if (const std::string problem = npy_dims_problem(static_cast<std::size_t>(a.ndim())); !problem.empty()) throw NpyError(name + ": " + problem);
  // As the file would hold it: C order, as doubles (float32 converts exactly), then the reader's own conversion.
  const py::array_t<double, py::array::c_style | py::array::forcecast> c(a);
  NpyArray array{{}, a.itemsize() == 4 ? NpyDtype::float32 : NpyDtype::float64, {}};
  for (py::ssize_t i = 0; i < c.ndim(); ++i) array.shape.push_back(static_cast<std::size_t>(c.shape(i)));
  array.values.assign(c.data(), c.data() + c.size());
  for (std::size_t i = 0; i < array.values.size(); ++i)
    if (!std::isfinite(array.values[i])) throw NpyError(name + ": " + npy_nonfinite_problem(array.values[i], i, array.shape));
  return matrix_from_npy<double>(array, name);
}

py::array_t<double> to_numpy(const Mat<double>& m) {
  py::array_t<double> out({static_cast<py::ssize_t>(m.rows()), static_cast<py::ssize_t>(m.cols())});
  using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<RowMajor>(out.mutable_data(), m.rows(), m.cols()) = m;
  return out;
}

QkArray qk_array(py::handle obj, const std::string& name, py::array& keep) {
  bool copied = false;
  keep = readable(obj, copied);
  const std::string descr = dtype_str(keep);
  QkArray a;
  if (descr == "<f2") a.dtype = QkArrayDtype::f16;
  else if (descr == "<f4") a.dtype = QkArrayDtype::f32;
  else if (descr == "<f8") a.dtype = QkArrayDtype::f64;
  else
    throw std::invalid_argument(fmt::format("{}: unsupported dtype '{}': only float16 ('<f2'), float32 ('<f4') and float64 ('<f8')", name, descr));
  a.data = keep.data();
  for (py::ssize_t i = 0; i < keep.ndim(); ++i) {
    a.shape.push_back(static_cast<std::int64_t>(keep.shape(i)));
    a.strides.push_back(static_cast<std::int64_t>(keep.strides(i)) / static_cast<std::int64_t>(keep.itemsize()));
  }
  return a;
}

template class HeadStacks<float>;
template class HeadStacks<double>;
template py::array_t<float> new_output(const std::vector<std::size_t>&, Eigen::Index, Eigen::Index);
template py::array_t<double> new_output(const std::vector<std::size_t>&, Eigen::Index, Eigen::Index);
template void write_head_stacks(const std::vector<std::pair<const HeadStack<float>*, float*>>&);
template void write_head_stacks(const std::vector<std::pair<const HeadStack<double>*, double*>>&);

}  // namespace attnlab::python
