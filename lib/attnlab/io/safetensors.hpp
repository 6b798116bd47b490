// safetensors files (the format most Transformer checkpoints ship in): a strict reader that checks the
// whole header before a byte of data is used and reads tensors one range at a time, and a writer.
//
// The format: an 8-byte little-endian u64 N, N bytes of UTF-8 JSON mapping each tensor name to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets into the bytes after the header, C order,
// little-endian) plus an optional "__metadata__" object of strings, then the data.
//
//   const SafetensorsFile f("model.safetensors");
//   const SafetensorsTensor& t = f.header().tensor("h.0.attn.c_attn.weight");
//   std::vector<float> w(t.elements());
//   f.read_rows(t, 0, t.rows(), w.data());   // BF16 and F16 widen exactly to float
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "attnlab/io/json_reader.hpp"

namespace attnlab {

// A file that is not a safetensors file we accept, or a tensor that cannot be read as asked; what() is
// one line "<file>: <problem>". Tools map it to exit status 2: the input is wrong, not the run.
struct SafetensorsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The element types the format names (each a whole number of bytes). A header naming any other dtype
// is refused: its tensors' sizes could not be checked.
enum class SafetensorsDtype { BOOL, U8, I8, F8_E5M2, F8_E4M3, F8_E8M0, I16, U16, F16, BF16, I32, U32, F32, I64, U64, F64 };
std::string to_string(SafetensorsDtype dtype);
std::size_t dtype_bytes(SafetensorsDtype dtype);
// F64, F32, F16 and BF16: the dtypes an attention weight can be read from (every value exactly).
bool is_float_dtype(SafetensorsDtype dtype);

struct SafetensorsTensor {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::F32;
  std::vector<std::uint64_t> shape;  // empty for a scalar
  std::uint64_t begin = 0, end = 0;  // data_offsets: bytes [begin, end) after the header

  std::uint64_t elements() const;
  // Rows along the first axis, and the elements of one row (a scalar is one row of one element).
  std::uint64_t rows() const { return shape.empty() ? 1 : shape[0]; }
  std::uint64_t row_elements() const;
};

// The reference reader's bound on the header (a hostile length must not make us allocate gigabytes).
inline constexpr std::uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;
// More axes than this are refused (no weight has them; it bounds the work a hostile shape can ask for).
inline constexpr std::size_t kSafetensorsMaxDims = 32;

struct SafetensorsHeader {
  std::vector<SafetensorsTensor> tensors;      // sorted by name
  std::map<std::string, std::string> metadata;  // "__metadata__", empty when absent

  const SafetensorsTensor* find(const std::string& name) const;
};

// Parses and checks a header's JSON text against `data_bytes`, the size of the data after it. Refuses,
// with SafetensorsError "<name>: <problem>": text that is not UTF-8 JSON, a root that is not an object,
// a repeated name, an entry not of the form {"dtype", "shape", "data_offsets"} (nothing more), an unknown
// dtype, a shape whose size overflows or differs from its byte range, ranges outside the data, ranges
// that overlap or leave a gap, and data after the last range (as the reference reader does), and a
// "__metadata__" that is not an object of strings.
SafetensorsHeader parse_safetensors_header(std::string_view json, std::uint64_t data_bytes, const std::string& name);

namespace detail {
// Random access to a file's bytes (pread) or to bytes in memory (the fuzz target).
class ByteSource;
}  // namespace detail

// One safetensors file: its header checked whole on opening; tensors read by ranges of rows, so a file
// of any size is read with memory for the rows asked for only.
class SafetensorsFile {
 public:
  // Opens `path` (a regular file: a FIFO or device is refused without blocking) and checks the header:
  // an 8-byte length within the file and at most kSafetensorsMaxHeaderBytes, then
  // parse_safetensors_header. The file stays open until destruction.
  explicit SafetensorsFile(const std::filesystem::path& path);
  // The same over bytes in memory, `name` standing for the file in messages.
  SafetensorsFile(std::span<const unsigned char> bytes, std::string name);
  ~SafetensorsFile();
  SafetensorsFile(SafetensorsFile&&) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept;

  const SafetensorsHeader& header() const { return header_; }
  const std::string& name() const { return name_; }
  // The tensor called `tensor`; SafetensorsError naming the file when there is none.
  const SafetensorsTensor& tensor(const std::string& tensor) const;

  // Reads rows [first_row, first_row + rows) of `t` (a tensor of this file) into `out` (rows *
  // t.row_elements() values, C order). F64 reads only into double (float would round it); F32, F16 and
  // BF16 into either, exactly. Refuses another dtype naming the tensor and its dtype, rows outside the
  // tensor, a file that has changed size since it was opened, and a non-finite value (naming its
  // position). Safe to call from several threads at once.
  void read_rows(const SafetensorsTensor& t, std::uint64_t first_row, std::uint64_t rows, float* out) const;
  void read_rows(const SafetensorsTensor& t, std::uint64_t first_row, std::uint64_t rows, double* out) const;

 private:
  template <typename T>
  void read_rows_as(const SafetensorsTensor& t, std::uint64_t first_row, std::uint64_t rows, T* out) const;
  void open_header();

  std::string name_;
  std::unique_ptr<detail::ByteSource> source_;
  std::uint64_t data_start_ = 0;
  SafetensorsHeader header_;
};

// How read_rows words a non-finite value: "tensor "<name>" holds a non-finite value (nan) at element 12 (C order)",
// the element counted in C order through the whole tensor (for weights held in memory too: model/qk_arrays.hpp).
std::string nonfinite_weight_problem(std::string_view tensor, double value, std::uint64_t element);

// Reads a small side file (an index, a config.json) that may be hostile: a regular file (opened without
// blocking), at most `max_bytes` long: read_bounded_text (bounded_file.hpp) with its refusals as
// SafetensorsError "<path>: <problem>".
std::string read_bounded_file(const std::filesystem::path& path, std::uint64_t max_bytes);
// The same file parsed as a JSON object (an index, a config.json); `what` says what the object should
// hold, for the message when it is not one. Throws SafetensorsError "<path>: <problem>".
JsonObject read_bounded_json_object(const std::filesystem::path& path, std::uint64_t max_bytes, const std::string& what);

// ---- Writing ----

// One tensor to write: its bytes come from `bytes` (called once, when the file reaches it), which must
// return exactly elements x dtype_bytes little-endian bytes (encode_safetensors_values makes them).
struct SafetensorsOutput {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::F32;
  std::vector<std::uint64_t> shape;
  std::function<std::string()> bytes;
};

// `values` in `dtype` (F64, F32, F16 or BF16; F16 and BF16 rounded to nearest, ties to even), as the
// file stores them. Throws std::invalid_argument for another dtype or a non-finite value.
std::string encode_safetensors_values(std::span<const float> values, SafetensorsDtype dtype);
std::string encode_safetensors_values(std::span<const double> values, SafetensorsDtype dtype);

// Writes `tensors` (in name order, data contiguous) and `metadata` to `path` atomically (temporary file,
// then rename), the header padded with spaces to a multiple of 8 bytes as the reference writer does.
// Throws std::invalid_argument for a repeated or empty name, a name or metadata holding a control
// character, or bytes of the wrong length; OutputError when the file cannot be written.
void write_safetensors(const std::filesystem::path& path, const std::vector<SafetensorsOutput>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace attnlab
