// NumPy arrays as the library's head stacks, matrices and weights: the checks attend's .npy reader makes, in its
// words, and conversions that read an array in place whatever its strides (C order, Fortran order, slices).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "attnlab/core/head_stack.hpp"
#include "attnlab/core/matrix.hpp"
#include "attnlab/lab/attend_call.hpp"
#include "attnlab/model/qk_arrays.hpp"

namespace attnlab::python {

namespace py = pybind11;

// An array taken as it is when its strides can be read in place (any order, any non-negative multiple of the
// item size), else copied to C order first (negative strides, misaligned data): the one case where a NumPy copy
// is made. `copied` says which, for the checks.
py::array readable(py::handle obj, bool& copied);

// A (batch, heads, n, d) input of attend as it lies in memory. Built with the GIL held; read without it.
struct StackView {
  AttendInput shape;                   // label ("--q") and the head-stack shape
  std::vector<std::size_t> given;      // the shape as given (2 to 4 axes)
  const unsigned char* data = nullptr;
  std::array<std::int64_t, 4> strides{};  // in bytes, over (batch, heads, n, d)
  bool is_double = false;
  bool copied = false;
};

// Checks an input as attend's reader would (AttendUsageError "<label>: <problem>" in its words: the dtype, the
// number of axes, an empty shape) and views it; `keep` holds the array (the caller's, or the copy) alive.
StackView stack_view(py::handle obj, const std::string& label, py::array& keep);

// The views as head stacks of column-major heads (the kernels' layout), each read in place, all converted in one
// parallel pass. Refuses (AttendUsageError) the first input, in the views' order, holding a non-finite value, naming
// it in C order ("<label>: value nan at flat index 3 (index (0, 3), C order) is not finite"). T must be the views'
// precision. Needs no GIL.
//
// The stacks live in buffers of the calling thread kept from one call to the next, up to kKeptBytes in all: a call
// with the shapes of the one before writes into pages the OS has already mapped, where fresh buffers would cost a
// page fault and a zeroed page every 4 KiB (as much as the kernel's own time for exact attention at n 2048, d 64,
// when glibc has just returned the previous call's buffers to the OS). Larger stacks are released at the end of
// the call. One HeadStacks per thread at a time.
template <typename T>
class HeadStacks {
 public:
  static constexpr std::size_t kKeptBytes = std::size_t{64} << 20;
  explicit HeadStacks(const std::vector<StackView>& views);
  ~HeadStacks();
  HeadStacks(const HeadStacks&) = delete;
  HeadStacks& operator=(const HeadStacks&) = delete;
  const HeadStack<T>& operator[](std::size_t i) const { return (*slots_)[i]; }

 private:
  std::vector<HeadStack<T>>* slots_;
};

// The inputs read in place, for a kernel that takes C order (run_attention_c_order): whether every view holds each
// head's rows in C order (a row's d values adjacent, rows d apart; the heads anywhere), each head's address
// (batch-major, as HeadStacks orders them), and the check HeadStacks makes as it converts: AttendUsageError for the
// first input, in the views' order, holding a non-finite value, named as HeadStacks names it. T must be the views'
// precision. Need no GIL.
template <typename T>
bool rows_in_c_order(const std::vector<StackView>& views);
template <typename T>
std::vector<const T*> head_pointers(const StackView& view);
template <typename T>
void check_finite_in_place(const std::vector<StackView>& views);

// A new C-order array of `given` leading axes followed by (n, d), for a stack of that many heads.
template <typename T>
py::array_t<T> new_output(const std::vector<std::size_t>& leading, Eigen::Index n, Eigen::Index d);
// The bytes of the calling thread's kept buffers (float and double), for the checks.
std::size_t kept_stack_bytes();

// Writes each stack into its `out` (C order, as new_output made it), all in one parallel pass. Needs no GIL given
// the pointers.
template <typename T>
void write_head_stacks(const std::vector<std::pair<const HeadStack<T>*, T*>>& outputs);

// A float32 or float64 array of 1 or 2 axes as a float64 matrix, checked as attend checks a draw read from a file
// (the name stands for the file: "--draws: E: expected a matrix ...").
Mat<double> draw_matrix(py::handle obj, const std::string& name);
// A float64 matrix as a new C-order NumPy array.
py::array_t<double> to_numpy(const Mat<double>& m);

// A weight or bias for QkArrays (float16, float32 or float64, read in place); `keep` holds it alive. ValueError
// (std::invalid_argument) naming the argument for another dtype.
QkArray qk_array(py::handle obj, const std::string& name, py::array& keep);

}  // namespace attnlab::python
