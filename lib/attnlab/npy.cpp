// NumPy .npy files: a strict reader and a writer for float32/float64 arrays of 1 to 4 dimensions.
//
// The format (numpy/lib/format.py, NEP 1): the magic "\x93NUMPY", a major and a minor
// version byte, the header length (uint16 little-endian in 1.0, uint32 in 2.0 and 3.0),
// then a Python dict literal {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }
// padded with spaces and a newline, then the raw data. We read only what we can use
// and refuse everything else with one line naming the problem.
#include "attnlab/npy.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <string_view>

#include "attnlab/atomic_file.hpp"

namespace attnlab {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
// A header longer than this is not one numpy writes for a <= 4-D float array; refusing
// it early keeps a hostile length field from making us scan megabytes of text.
constexpr std::size_t kMaxHeaderBytes = 1 << 16;

[[noreturn]] void fail(const std::string& name, const std::string& problem) {
  throw NpyError(name + ": " + problem);
}

std::size_t item_size(NpyDtype t) { return t == NpyDtype::float32 ? 4 : 8; }

// A cursor over the header dict with the few Python literal forms numpy writes.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& name) : text_(text), name_(name) {}

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  bool accept(char c) {
    skip_space();
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c, std::string_view what) {
    if (!accept(c)) fail(name_, fmt::format("malformed header: expected '{}' {}", c, what));
  }

  // 'text' or "text"; no escapes (numpy never writes them in the keys or dtypes we accept).
  std::string string_literal(std::string_view what) {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail(name_, fmt::format("malformed header: expected a quoted string for {}", what));
    const std::size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) fail(name_, fmt::format("malformed header: unterminated string for {}", what));
    std::string s(text_.substr(pos_ + 1, end - pos_ - 1));
    if (s.find('\\') != std::string::npos) fail(name_, fmt::format("malformed header: escape sequence in {}", what));
    pos_ = end + 1;
    return s;
  }

  bool boolean(std::string_view what) {
    skip_space();
    for (const auto& [word, value] : {std::pair{std::string_view("True"), true}, std::pair{std::string_view("False"), false}}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    fail(name_, fmt::format("malformed header: {} must be True or False", what));
  }

  // (a, b, ...) of non-negative decimal integers; (a,) for one dimension, () for none.
  std::vector<std::size_t> shape_tuple() {
    expect('(', "to open the shape");
    std::vector<std::size_t> shape;
    while (!accept(')')) {
      if (shape.size() == 64) fail(name_, "malformed header: shape has more than 64 entries");
      shape.push_back(dimension());
      skip_space();
      if (accept(',')) continue;
      expect(')', "to close the shape");
      break;
    }
    return shape;
  }

 private:
  std::size_t dimension() {
    skip_space();
    if (peek() < '0' || peek() > '9') fail(name_, "malformed header: shape entries must be non-negative integers");
    std::uint64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      const std::uint64_t digit = static_cast<std::uint64_t>(peek() - '0');
      if (v > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) fail(name_, "shape entry overflows 64 bits");
      v = v * 10 + digit;
      ++pos_;
    }
    if (peek() == 'L') ++pos_;  // Python 2's long suffix, written by old numpy
    if (v > std::numeric_limits<std::size_t>::max()) fail(name_, "shape entry overflows size_t");
    return static_cast<std::size_t>(v);
  }

  std::string_view text_;
  const std::string& name_;
  std::size_t pos_ = 0;
};

struct Header {
  NpyDtype dtype;
  bool fortran_order;
  std::vector<std::size_t> shape;
};

NpyDtype parse_descr(const std::string& descr, const std::string& name) {
  if (descr == "<f4") return NpyDtype::float32;
  if (descr == "<f8") return NpyDtype::float64;
  if (descr == ">f4" || descr == ">f8") fail(name, fmt::format("big-endian data ('{}') is not supported; save it little-endian", descr));
  if (descr == "|O" || descr == "O") fail(name, "object arrays are not supported");
  fail(name, fmt::format("unsupported dtype '{}': only float32 ('<f4') and float64 ('<f8')", descr));
}

Header parse_header(std::string_view text, const std::string& name) {
  HeaderParser p(text, name);
  std::optional<NpyDtype> dtype;
  std::optional<bool> fortran;
  std::optional<std::vector<std::size_t>> shape;
  p.expect('{', "at the start of the header");
  while (!p.accept('}')) {
    const std::string key = p.string_literal("a header key");
    p.expect(':', "after a header key");
    if (key == "descr") {
      p.skip_space();
      if (p.peek() == '[') fail(name, "structured dtypes are not supported");
      if (dtype) fail(name, "malformed header: 'descr' given twice");
      dtype = parse_descr(p.string_literal("'descr'"), name);
    } else if (key == "fortran_order") {
      if (fortran) fail(name, "malformed header: 'fortran_order' given twice");
      fortran = p.boolean("'fortran_order'");
    } else if (key == "shape") {
      if (shape) fail(name, "malformed header: 'shape' given twice");
      shape = p.shape_tuple();
    } else {
      fail(name, fmt::format("malformed header: unknown key '{}'", key));
    }
    if (p.accept(',')) continue;
    p.expect('}', "to close the header");
    break;
  }
  p.skip_space();
  if (!p.at_end()) fail(name, "malformed header: text after the closing '}'");
  if (!dtype) fail(name, "malformed header: no 'descr'");
  if (!fortran) fail(name, "malformed header: no 'fortran_order'");
  if (!shape) fail(name, "malformed header: no 'shape'");
  if (shape->empty()) fail(name, "0-d (scalar) arrays are not supported: 1 to 4 dimensions");
  if (shape->size() > kNpyMaxDims) fail(name, fmt::format("{}-d arrays are not supported: 1 to 4 dimensions", shape->size()));
  return {*dtype, *fortran, std::move(*shape)};
}

// The number of elements, or nullopt when it (or its size in bytes) overflows.
std::optional<std::size_t> checked_byte_count(const std::vector<std::size_t>& shape, std::size_t item) {
  std::size_t n = 1;
  for (std::size_t s : shape) {
    if (s != 0 && n > std::numeric_limits<std::size_t>::max() / s) return std::nullopt;
    n *= s;
  }
  if (n > std::numeric_limits<std::size_t>::max() / item) return std::nullopt;
  return n * item;
}

std::uint64_t little_endian(const unsigned char* p, std::size_t bytes) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}

double decode(const unsigned char* p, NpyDtype dtype) {
  if (dtype == NpyDtype::float32) return std::bit_cast<float>(static_cast<std::uint32_t>(little_endian(p, 4)));
  return std::bit_cast<double>(little_endian(p, 8));
}

// Position in C order of the element at F-order position `f`, via the multi-index.
std::vector<std::size_t> fortran_to_c_positions(const std::vector<std::size_t>& shape, std::size_t count) {
  std::vector<std::size_t> c_pos(count);
  std::vector<std::size_t> index(shape.size(), 0);
  for (std::size_t f = 0; f < count; ++f) {
    std::size_t c = 0;
    for (std::size_t k = 0; k < shape.size(); ++k) c = c * shape[k] + index[k];
    c_pos[f] = c;
    // Advance the multi-index with the first axis fastest (Fortran order).
    for (std::size_t k = 0; k < shape.size(); ++k) {
      if (++index[k] < shape[k]) break;
      index[k] = 0;
    }
  }
  return c_pos;
}

std::string shape_text(const std::vector<std::size_t>& shape) {
  return shape.size() == 1 ? fmt::format("({},)", shape[0]) : fmt::format("({})", fmt::join(shape, ", "));
}

}  // namespace

NpyArray parse_npy(std::span<const unsigned char> bytes, const std::string& name) {
  // 1. Magic and version.
  if (bytes.size() < kMagic.size() + 2 || std::memcmp(bytes.data(), kMagic.data(), kMagic.size()) != 0)
    fail(name, "not an .npy file (bad magic)");
  const unsigned major = bytes[6], minor = bytes[7];
  if (major < 1 || major > 3 || minor != 0) fail(name, fmt::format("unsupported .npy format version {}.{}", major, minor));

  // 2. Header length and text.
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  const std::size_t prefix = 8 + length_bytes;
  if (bytes.size() < prefix) fail(name, "truncated: the file ends inside the header length");
  const std::size_t header_len = static_cast<std::size_t>(little_endian(bytes.data() + 8, length_bytes));
  if (header_len > kMaxHeaderBytes) fail(name, fmt::format("header length {} is implausibly large", header_len));
  if (header_len > bytes.size() - prefix) fail(name, fmt::format("truncated: header of {} bytes, file has {} after the prefix", header_len, bytes.size() - prefix));
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + prefix), header_len);
  for (char c : text)
    if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r')
      fail(name, "malformed header: control character");
  Header h = parse_header(text, name);

  // 3. The data must be exactly as long as the shape says: shorter is truncation, longer a lying header.
  const std::size_t item = item_size(h.dtype);
  const auto data_bytes = checked_byte_count(h.shape, item);
  if (!data_bytes) fail(name, fmt::format("shape {} overflows the address space", shape_text(h.shape)));
  const std::size_t available = bytes.size() - prefix - header_len;
  if (available < *data_bytes)
    fail(name, fmt::format("truncated data: shape {} needs {} bytes, file has {}", shape_text(h.shape), *data_bytes, available));
  if (available > *data_bytes)
    fail(name, fmt::format("{} bytes after the data: the header's shape {} does not match the file", available - *data_bytes, shape_text(h.shape)));

  // 4. Decode, reorder Fortran-order files to C order, and refuse non-finite values.
  const std::size_t count = *data_bytes / item;
  const unsigned char* data = bytes.data() + prefix + header_len;
  NpyArray out{h.shape, h.dtype, std::vector<double>(count)};
  const std::vector<std::size_t> c_pos = h.fortran_order && h.shape.size() > 1 ? fortran_to_c_positions(h.shape, count)
                                                                                : std::vector<std::size_t>{};
  for (std::size_t i = 0; i < count; ++i) {
    const double v = decode(data + i * item, h.dtype);
    const std::size_t at = c_pos.empty() ? i : c_pos[i];
    if (!std::isfinite(v)) fail(name, fmt::format("value {} (C-order position {}) is not finite", v, at));
    out.values[at] = v;
  }
  return out;
}

NpyArray read_npy(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path.string(), "cannot open for reading");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(path.string(), "is a directory, not an .npy file");
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail(path.string(), "read error");
  return parse_npy(bytes, path.string());
}

std::string format_npy(const NpyArray& array, const NpyWriteOptions& options) {
  if (array.shape.empty() || array.shape.size() > kNpyMaxDims)
    throw std::invalid_argument(fmt::format("format_npy: {} dimensions; 1 to 4 are supported", array.shape.size()));
  if (options.major_version < 0 || options.major_version > 3)
    throw std::invalid_argument(fmt::format("format_npy: format version {} (1, 2, 3, or 0 for automatic)", options.major_version));
  const std::size_t item = item_size(array.dtype);
  const auto data_bytes = checked_byte_count(array.shape, item);
  if (!data_bytes || *data_bytes / item != array.values.size())
    throw std::invalid_argument(fmt::format("format_npy: shape {} does not hold {} values", shape_text(array.shape), array.values.size()));

  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': {}, 'shape': {}, }}",
                                 array.dtype == NpyDtype::float32 ? "<f4" : "<f8",
                                 options.fortran_order ? "True" : "False", shape_text(array.shape));
  int major = options.major_version;
  if (major == 0) major = dict.size() + 1 + 10 > 65535 ? 2 : 1;
  const std::size_t prefix = major == 1 ? 10 : 12;
  if (major == 1 && dict.size() + 1 + prefix > 65535)
    throw std::invalid_argument("format_npy: header too long for format 1.0");
  // Pad with spaces so the data starts on a 64-byte boundary, as numpy does.
  const std::size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict.push_back('\n');

  std::string out(kMagic);
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  for (std::size_t i = 0; i < prefix - 8; ++i) out.push_back(static_cast<char>((dict.size() >> (8 * i)) & 0xff));
  out += dict;

  // Values in file order: C order as stored, or transposed to Fortran order.
  const std::size_t count = array.values.size();
  const std::vector<std::size_t> c_pos = options.fortran_order && array.shape.size() > 1
                                             ? fortran_to_c_positions(array.shape, count)
                                             : std::vector<std::size_t>{};
  out.reserve(out.size() + *data_bytes);
  for (std::size_t i = 0; i < count; ++i) {
    const double v = array.values[c_pos.empty() ? i : c_pos[i]];
    if (!std::isfinite(v)) throw std::invalid_argument(fmt::format("format_npy: value {} is not finite", v));
    std::uint64_t bits;
    if (array.dtype == NpyDtype::float32) {
      const float f = static_cast<float>(v);
      if (!std::isfinite(f)) throw std::invalid_argument(fmt::format("format_npy: value {} overflows float32", v));
      bits = std::bit_cast<std::uint32_t>(f);
    } else {
      bits = std::bit_cast<std::uint64_t>(v);
    }
    for (std::size_t b = 0; b < item; ++b) out.push_back(static_cast<char>((bits >> (8 * b)) & 0xff));
  }
  return out;
}

void write_npy(const std::filesystem::path& path, const NpyArray& array, const NpyWriteOptions& options) {
  write_file_atomically(path, format_npy(array, options));
}

// ---- conversions -------------------------------------------------------------------

namespace {

template <typename T>
constexpr NpyDtype dtype_of() {
  return sizeof(T) == 4 ? NpyDtype::float32 : NpyDtype::float64;
}

// A float64 value too large for float becomes inf: refuse it rather than compute with it.
template <typename T>
T narrow(double v, const std::string& name) {
  const T t = static_cast<T>(v);
  if (!std::isfinite(t)) fail(name, fmt::format("value {} overflows {}", v, sizeof(T) == 4 ? "float32" : "float64"));
  return t;
}

Eigen::Index as_index(std::size_t s, const std::string& name) {
  if (s > static_cast<std::size_t>(std::numeric_limits<Eigen::Index>::max())) fail(name, "dimension too large");
  return static_cast<Eigen::Index>(s);
}

}  // namespace

template <typename T>
NpyArray to_npy(const Mat<T>& m) {
  NpyArray a{{static_cast<std::size_t>(m.rows()), static_cast<std::size_t>(m.cols())}, dtype_of<T>(), {}};
  a.values.reserve(static_cast<std::size_t>(m.size()));
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < m.cols(); ++j) a.values.push_back(static_cast<double>(m(i, j)));
  return a;
}

template <typename T>
NpyArray to_npy(const Vec<T>& v) {
  NpyArray a{{static_cast<std::size_t>(v.size())}, dtype_of<T>(), {}};
  a.values.assign(v.data(), v.data() + v.size());
  return a;
}

template <typename T>
NpyArray to_npy(const HeadStack<T>& s) {
  NpyArray a{{static_cast<std::size_t>(s.batch()), static_cast<std::size_t>(s.heads()), static_cast<std::size_t>(s.n()),
              static_cast<std::size_t>(s.d())},
             dtype_of<T>(),
             {}};
  a.values.reserve(static_cast<std::size_t>(s.count() * s.n() * s.d()));
  for (Eigen::Index h = 0; h < s.count(); ++h)
    for (Eigen::Index i = 0; i < s.n(); ++i)
      for (Eigen::Index j = 0; j < s.d(); ++j) a.values.push_back(static_cast<double>(s[h](i, j)));
  return a;
}

template <typename T>
Mat<T> matrix_from_npy(const NpyArray& array, const std::string& name) {
  if (array.dims() != 1 && array.dims() != 2)
    fail(name, fmt::format("expected a matrix (2-D array), got shape {}", shape_text(array.shape)));
  const Eigen::Index rows = as_index(array.shape[0], name);
  const Eigen::Index cols = array.dims() == 2 ? as_index(array.shape[1], name) : 1;
  Mat<T> m(rows, cols);
  for (Eigen::Index i = 0; i < rows; ++i)
    for (Eigen::Index j = 0; j < cols; ++j) m(i, j) = narrow<T>(array.values[static_cast<std::size_t>(i * cols + j)], name);
  return m;
}

template <typename T>
HeadStack<T> head_stack_from_npy(const NpyArray& array, const std::string& name) {
  if (array.dims() < 2) fail(name, fmt::format("expected a (batch, heads, n, d) array, got shape {}", shape_text(array.shape)));
  // Missing leading axes are 1: (n, d) is one head, (heads, n, d) one batch.
  std::vector<std::size_t> full(kNpyMaxDims - array.dims(), 1);
  full.insert(full.end(), array.shape.begin(), array.shape.end());
  if (full[0] == 0 || full[1] == 0) fail(name, fmt::format("batch and heads must be at least 1, got shape {}", shape_text(array.shape)));
  HeadStack<T> s(as_index(full[0], name), as_index(full[1], name), as_index(full[2], name), as_index(full[3], name));
  std::size_t at = 0;
  for (Eigen::Index h = 0; h < s.count(); ++h)
    for (Eigen::Index i = 0; i < s.n(); ++i)
      for (Eigen::Index j = 0; j < s.d(); ++j) s[h](i, j) = narrow<T>(array.values[at++], name);
  return s;
}

template NpyArray to_npy<float>(const Mat<float>&);
template NpyArray to_npy<double>(const Mat<double>&);
template NpyArray to_npy<float>(const Vec<float>&);
template NpyArray to_npy<double>(const Vec<double>&);
template NpyArray to_npy<float>(const HeadStack<float>&);
template NpyArray to_npy<double>(const HeadStack<double>&);
template Mat<float> matrix_from_npy<float>(const NpyArray&, const std::string&);
template Mat<double> matrix_from_npy<double>(const NpyArray&, const std::string&);
template HeadStack<float> head_stack_from_npy<float>(const NpyArray&, const std::string&);
template HeadStack<double> head_stack_from_npy<double>(const NpyArray&, const std::string&);

}  // namespace attnlab
