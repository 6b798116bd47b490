// NumPy .npy files: read and write float32/float64 arrays of 1 to 4 dimensions; write int32 ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnlab/core/head_stack.hpp"
#include "attnlab/core/matrix.hpp"

namespace attnlab {

// Thrown for a file that is not an .npy array we accept; what() is one line, "<file>: <problem>".
// Tools map it to exit status 2: the input is wrong, not the run.
struct NpyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// int32 is for writing integer data other tools read (the recall task's test set: token ids and labels); the
// reader takes floats only (every input of ours is a matrix of reals) and refuses it as any other dtype.
enum class NpyDtype { float32, float64, int32 };

// An array as read from or written to a file: its shape (1 to 4 dimensions, each >= 0),
// the element type stored in the file, and the values in C (row-major) order whatever
// order the file used. float32 values convert to double exactly, so nothing is lost.
struct NpyArray {
  std::vector<std::size_t> shape;
  NpyDtype dtype = NpyDtype::float64;
  std::vector<double> values;

  std::size_t dims() const { return shape.size(); }
};

// The largest number of dimensions we read or write (batch x heads x n x d).
inline constexpr std::size_t kNpyMaxDims = 4;

// Parses the bytes of an .npy file (format versions 1.0, 2.0 and 3.0; '<f4', '<f8' or '<i4';
// C or Fortran order; 1 to 4 dimensions). `name` is used in error messages. Every
// value must be finite. Throws NpyError for anything else: bad magic, unknown version,
// a malformed header, big-endian or non-float data, a shape whose size overflows, or
// data shorter or longer than the shape says. Never reads outside `bytes`.
NpyArray parse_npy(std::span<const unsigned char> bytes, const std::string& name);

// Reads `path` with parse_npy; a file that cannot be opened is an NpyError too.
NpyArray read_npy(const std::filesystem::path& path);

struct NpyWriteOptions {
  bool fortran_order = false;  // store the values in column-major order
  int major_version = 0;       // 1, 2 or 3; 0 picks 1.0 unless the header needs more
};

// The bytes of an .npy file holding `array` (values rounded to float when dtype is float32).
// Throws std::invalid_argument for a shape of 0 or more than 4 dimensions, values that do
// not match the shape, a non-finite value (int32: a value that is not an int32), or a version other than 0 to 3.
std::string format_npy(const NpyArray& array, const NpyWriteOptions& options = {});

// Writes format_npy(array) to `path` atomically (temporary file, then rename).
void write_npy(const std::filesystem::path& path, const NpyArray& array, const NpyWriteOptions& options = {});

// Conversions to and from the library's matrix types. A matrix is a 2-D array (rows, cols);
// a vector a 1-D array; a head stack a 4-D array (batch, heads, n, d). Reading a matrix from
// a 1-D file gives one column. from_npy_* throw NpyError naming `name` on a shape that does
// not fit; a 2-D array read as a head stack has batch = heads = 1, a 3-D one batch = 1.
template <typename T>
NpyArray to_npy(const Mat<T>& m);
template <typename T>
NpyArray to_npy(const Vec<T>& v);
template <typename T>
NpyArray to_npy(const HeadStack<T>& s);
template <typename T>
Mat<T> matrix_from_npy(const NpyArray& array, const std::string& name);
template <typename T>
HeadStack<T> head_stack_from_npy(const NpyArray& array, const std::string& name);

// The refusals of the readers above worded for an array that does not come from a file (the Python module's
// arrays), each "" when there is nothing to refuse: the dtype (NumPy's dtype string, '<f4', '>f8', '|O'), the
// number of dimensions (1 to 4), a shape that is no head stack (fewer than 2 or more than 4 dimensions, batch,
// heads, n or d zero), the first non-finite value (its flat index in C order, as numpy's a.flat counts).
std::string npy_dtype_problem(const std::string& descr);
std::string npy_dims_problem(std::size_t dims);
std::string head_stack_shape_problem(const std::vector<std::size_t>& shape);
std::string npy_nonfinite_problem(double value, std::size_t flat, const std::vector<std::size_t>& shape);
// A head stack's shape as (batch, heads, n, d): missing leading axes are 1.
std::vector<std::size_t> head_stack_shape(const std::vector<std::size_t>& shape);

// Reads a matrix or a head stack straight from a file.
template <typename T>
Mat<T> read_npy_matrix(const std::filesystem::path& path) {
  return matrix_from_npy<T>(read_npy(path), path.string());
}
template <typename T>
HeadStack<T> read_npy_head_stack(const std::filesystem::path& path) {
  return head_stack_from_npy<T>(read_npy(path), path.string());
}

}  // namespace attnlab
