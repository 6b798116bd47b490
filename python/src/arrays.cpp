// NumPy arrays as head stacks, matrices and weights (arrays.hpp).
#include "arrays.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <omp.h>
#include <stdexcept>

#include "attnlab/core/finite.hpp"
#include "attnlab/io/npy.hpp"

namespace attnlab::python {

namespace {

// The transposing copies between NumPy's C order and the kernels' column-major heads go through tiles of
// kTile x kTile values, small enough to stay in L1.
constexpr Eigen::Index kTile = 16;

// dst (column-major, rows x cols, leading dimension rows) = the matrix whose (i, j) is src[i row + j col]. With
// `parallel`, the tiles' rows are shared among the threads (for one large head: a single-threaded copy of three
// 2048 x 64 inputs is a few percent of the fast kernel's time on two threads).
template <typename T>
void transpose_tiles(const T* src, std::int64_t row, std::int64_t col, Eigen::Index rows, Eigen::Index cols, T* dst,
                     bool parallel = false) {
  const auto band = [&](Eigen::Index i0) {
    T tile[kTile][kTile];
    const Eigen::Index bi = std::min(kTile, rows - i0);
    for (Eigen::Index j0 = 0; j0 < cols; j0 += kTile) {
      const Eigen::Index bj = std::min(kTile, cols - j0);
      for (Eigen::Index i = 0; i < bi; ++i) {
        const T* r = src + (i0 + i) * row + j0 * col;
        for (Eigen::Index j = 0; j < bj; ++j) tile[j][i] = r[j * col];
      }
      for (Eigen::Index j = 0; j < bj; ++j) std::copy(tile[j], tile[j] + bi, dst + (j0 + j) * rows + i0);
    }
  };
  const Eigen::Index bands = (rows + kTile - 1) / kTile;
  if (!parallel) {
    for (Eigen::Index b = 0; b < bands; ++b) band(b * kTile);
    return;
  }
#pragma omp parallel for schedule(static)
  for (Eigen::Index b = 0; b < bands; ++b) band(b * kTile);
}

// Whether one head is worth sharing among the threads (a parallel region costs microseconds to start).
bool share_head(Eigen::Index count, Eigen::Index n, Eigen::Index d) {
  return count == 1 && n * d >= (1 << 16) && omp_get_max_threads() > 1;
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

template <typename T>
HeadStack<T> to_head_stack(const StackView& v) {
  const AttendInput& s = v.shape;
  auto out = HeadStack<T>::uninitialized(s.batch, s.heads, s.n, s.d);
  const std::int64_t row = v.strides[2] / static_cast<std::int64_t>(sizeof(T)), col = v.strides[3] / static_cast<std::int64_t>(sizeof(T));
  const Eigen::Index count = s.count();
  // Each head's (n, d) block, row-major with the array's strides, into a column-major matrix: the transposing
  // copy attend makes from its file. Heads in parallel, each its own slot (one head: no parallel region, whose start
  // alone costs a wake-up of the runtime's threads).
  // Tile by tile through a small buffer in L1: each tile's rows read along the array, its columns written along the
  // head (a plain element-by-element transpose reads across the array's rows: 1.9 ms for three 2048 x 64 floats).
  const auto convert = [&](Eigen::Index h) {
    const auto* base = reinterpret_cast<const T*>(v.data + (h / s.heads) * v.strides[0] + (h % s.heads) * v.strides[1]);
    transpose_tiles(base, row, col, s.n, s.d, out[h].data(), share_head(count, s.n, s.d));
    return all_finite(out[h].data(), static_cast<std::size_t>(out[h].size()));
  };
  int finite = 1;
  if (count == 1) {
    finite = convert(0);
  } else {
#pragma omp parallel for schedule(static) reduction(&& : finite)
    for (Eigen::Index h = 0; h < count; ++h) finite = convert(h) && finite;
  }
  if (finite) return out;
  // The first non-finite value in C order, as the reader names it (the flat index of the array as given).
  for (Eigen::Index h = 0; h < count; ++h)
    for (Eigen::Index i = 0; i < s.n; ++i)
      for (Eigen::Index j = 0; j < s.d; ++j)
        if (!std::isfinite(out[h](i, j)))
          s.refuse(npy_nonfinite_problem(static_cast<double>(out[h](i, j)),
                                         static_cast<std::size_t>((h * s.n + i) * s.d + j), v.given));
  return out;
}

template <typename T>
py::array_t<T> new_output(const std::vector<std::size_t>& leading, Eigen::Index n, Eigen::Index d) {
  std::vector<py::ssize_t> shape(leading.begin(), leading.end());
  shape.push_back(static_cast<py::ssize_t>(n));
  shape.push_back(static_cast<py::ssize_t>(d));
  return py::array_t<T>(shape);
}

template <typename T>
void write_head_stack(const HeadStack<T>& stack, T* out) {
  const Eigen::Index n = stack.n(), d = stack.d();
  // The (n, d) C-order block is the column-major d x n matrix whose (j, i) is the head's (i, j) = data[j n + i].
  const auto write = [&](Eigen::Index h) { transpose_tiles(stack[h].data(), n, 1, d, n, out + h * n * d, share_head(stack.count(), n, d)); };
  if (stack.count() == 1) {
    write(0);
    return;
  }
#pragma omp parallel for schedule(static)
  for (Eigen::Index h = 0; h < stack.count(); ++h) write(h);
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

template HeadStack<float> to_head_stack(const StackView&);
template HeadStack<double> to_head_stack(const StackView&);
template py::array_t<float> new_output(const std::vector<std::size_t>&, Eigen::Index, Eigen::Index);
template py::array_t<double> new_output(const std::vector<std::size_t>&, Eigen::Index, Eigen::Index);
template void write_head_stack(const HeadStack<float>&, float*);
template void write_head_stack(const HeadStack<double>&, double*);

}  // namespace attnlab::python
