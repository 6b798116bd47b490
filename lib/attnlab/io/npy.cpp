// NumPy .npy files: a strict reader and a writer for float32/float64 arrays of 1 to 4 dimensions (and a writer of
// int32 ones).
//
// The format (numpy/lib/format.py, NEP 1): the magic "\x93NUMPY", a major and a minor
// version byte, the header length (uint16 little-endian in 1.0, uint32 in 2.0 and 3.0),
// then a Python dict literal {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }
// padded with spaces and a newline, then the raw data. We read only what we can use
// and refuse everything else with one line naming the problem.
#include "attnlab/io/npy.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <limits>
#include <optional>
#include <string_view>

#include "attnlab/io/atomic_file.hpp"
#include "attnlab/io/bounded_file.hpp"
#include "attnlab/io/memory_budget.hpp"
#include "attnlab/io/printable.hpp"

namespace attnlab {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
// Magic, two version bytes and the longest (4-byte) header length field.
constexpr std::size_t kMaxPrefixBytes = 12;
// A header longer than this is not one numpy writes for a <= 4-D float array (numpy's own
// reader stops at 10000); refusing it early keeps a hostile length field from making us
// allocate or scan megabytes of text.
constexpr std::size_t kMaxHeaderBytes = 1 << 16;
// numpy.save pads the dict with spaces so the data start on a multiple of 64 bytes, after
// first appending spaces so the growth axis could take up to 21 digits (numpy >= 1.24).
constexpr std::size_t kArrayAlign = 64;
constexpr std::size_t kGrowthAxisMaxDigits = 21;

[[noreturn]] void throw_npy_error(const std::string& name, const std::string& problem) {
  throw NpyError(escaped(name, true) + ": " + problem);
}

std::size_t item_size(NpyDtype t) { return t == NpyDtype::float64 ? 8 : 4; }

const char* descr_of(NpyDtype t) { return t == NpyDtype::float32 ? "<f4" : t == NpyDtype::float64 ? "<f8" : "<i4"; }

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word_char(char c) { return is_digit(c) || c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// A cursor over the header dict, accepting the Python literal forms numpy writes and
// ast.literal_eval reads for them: either quote, whitespace anywhere between tokens,
// trailing commas in the dict and the tuple, and (in versions 1.0 and 2.0, written by
// Python 2) an 'L' after an integer.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& name, bool long_suffix)
      : text_(text), name_(name), long_suffix_(long_suffix) {}

  [[noreturn]] void malformed(const std::string& problem) const {
    throw_npy_error(name_, fmt::format("malformed header: {} at byte {} of the header", problem, pos_));
  }
  void skip_space() {
    while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
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
    if (!accept(c)) malformed(fmt::format("expected '{}' {}", c, what));
  }

  // 'text' or "text"; no escapes or string prefixes (numpy never writes them in the keys or
  // dtypes we accept).
  std::string string_literal(std::string_view what) {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') malformed(fmt::format("expected a quoted string for {}", what));
    const std::size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) malformed(fmt::format("unterminated string for {}", what));
    std::string s(text_.substr(pos_ + 1, end - pos_ - 1));
    if (s.find('\\') != std::string::npos) malformed(fmt::format("escape sequence in {}", what));
    if (s.find('\n') != std::string::npos) malformed(fmt::format("line break in {}", what));
    pos_ = end + 1;
    return s;
  }

  bool boolean(std::string_view what) {
    skip_space();
    for (const auto& [word, value] : {std::pair{std::string_view("True"), true}, std::pair{std::string_view("False"), false}}) {
      if (text_.substr(pos_, word.size()) == word && (pos_ + word.size() >= text_.size() || !is_word_char(text_[pos_ + word.size()]))) {
        pos_ += word.size();
        return value;
      }
    }
    malformed(fmt::format("{} must be True or False", what));
  }

  // (a, b, ...) of non-negative decimal integers; (a,) for one dimension, () for none.
  // (a) is an integer in Python, not a tuple, and numpy refuses it: so do we.
  std::vector<std::size_t> shape_tuple() {
    expect('(', "to open the shape tuple");
    std::vector<std::size_t> shape;
    bool comma = false;
    while (!accept(')')) {
      if (shape.size() == 64) malformed("shape has more than 64 entries");
      shape.push_back(dimension());
      comma = accept(',');
      if (comma) continue;
      expect(')', "to close the shape tuple");
      break;
    }
    if (shape.size() == 1 && !comma) malformed(fmt::format("shape ({}) is an integer, not a tuple (numpy writes ({},))", shape[0], shape[0]));
    return shape;
  }

 private:
  std::size_t dimension() {
    skip_space();
    if (peek() == '-') malformed("negative dimension in the shape");
    if (!is_digit(peek())) malformed("shape entries must be non-negative decimal integers");
    const std::size_t start = pos_;
    std::uint64_t v = 0;
    while (is_digit(peek())) {
      const auto digit = static_cast<std::uint64_t>(peek() - '0');
      if (v > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) malformed("shape entry overflows 64 bits");
      v = v * 10 + digit;
      ++pos_;
    }
    // Python 3 reads 007 as a syntax error (only 0, 00, ... may start with 0).
    if (text_[start] == '0' && v != 0) malformed("shape entry with a leading zero");
    if (long_suffix_ && peek() == 'L') ++pos_;
    if (is_word_char(peek()) || peek() == '.') malformed("shape entries must be non-negative decimal integers");
    return static_cast<std::size_t>(v);
  }

  std::string_view text_;
  const std::string& name_;
  bool long_suffix_;
  std::size_t pos_ = 0;
};

struct Header {
  NpyDtype dtype;
  bool fortran_order;
  std::vector<std::size_t> shape;
};

NpyDtype parse_descr(const std::string& descr, const std::string& name) {
  if (const std::string problem = npy_dtype_problem(descr); !problem.empty()) throw_npy_error(name, problem);
  return descr == "<f4" ? NpyDtype::float32 : NpyDtype::float64;
}

Header parse_header(std::string_view text, const std::string& name, unsigned major) {
  // numpy decodes the header as latin-1 (1.0, 2.0) or UTF-8 (3.0); what it writes for our
  // dtypes is ASCII, so anything else is refused before it can reach a message.
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) throw_npy_error(name, fmt::format("malformed header: non-ASCII byte \\x{:02x} at byte {} of the header", c, i));
    if ((c < 0x20 || c == 0x7f) && !is_space(text[i]))
      throw_npy_error(name, fmt::format("malformed header: control byte \\x{:02x} at byte {} of the header", c, i));
  }
  HeaderParser p(text, name, major < 3);
  std::optional<NpyDtype> dtype;
  std::optional<bool> fortran;
  std::optional<std::vector<std::size_t>> shape;
  p.expect('{', "at the start of the header (it must be a dict)");
  while (!p.accept('}')) {
    const std::string key = p.string_literal("a header key");
    p.expect(':', "after a header key");
    if (key == "descr") {
      p.skip_space();
      if (p.peek() == '[') throw_npy_error(name, "structured dtypes are not supported");
      if (dtype) p.malformed("'descr' given twice");
      dtype = parse_descr(p.string_literal("'descr'"), name);
    } else if (key == "fortran_order") {
      if (fortran) p.malformed("'fortran_order' given twice");
      fortran = p.boolean("'fortran_order'");
    } else if (key == "shape") {
      if (shape) p.malformed("'shape' given twice");
      shape = p.shape_tuple();
    } else {
      p.malformed(fmt::format("unknown key '{}' (only 'descr', 'fortran_order' and 'shape')", escaped(key)));
    }
    if (p.accept(',')) continue;
    p.expect('}', "to close the header dict");
    break;
  }
  p.skip_space();
  if (!p.at_end()) p.malformed("text after the closing '}'");
  if (!dtype) throw_npy_error(name, "malformed header: no 'descr' key");
  if (!fortran) throw_npy_error(name, "malformed header: no 'fortran_order' key");
  if (!shape) throw_npy_error(name, "malformed header: no 'shape' key");
  if (const std::string problem = npy_dims_problem(shape->size()); !problem.empty()) throw_npy_error(name, problem);
  return {*dtype, *fortran, std::move(*shape)};
}

// The size in bytes of an array of `shape`, or nullopt when it does not fit in ptrdiff_t.
// As numpy does, the product of the non-zero dimensions must fit even when another one is
// zero: (0, 2^62, 2^62) is as unrepresentable as (1, 2^62, 2^62).
std::optional<std::size_t> checked_byte_count(const std::vector<std::size_t>& shape, std::size_t item) {
  constexpr auto kMax = static_cast<std::size_t>(std::numeric_limits<std::ptrdiff_t>::max());
  std::size_t nonzero = item;
  bool empty = false;
  for (const std::size_t s : shape) {
    if (s == 0) {
      empty = true;
      continue;
    }
    if (nonzero > kMax / s) return std::nullopt;
    nonzero *= s;
  }
  return empty ? 0 : nonzero;
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

// The multi-index of C-order flat position `flat`.
std::vector<std::size_t> c_index(const std::vector<std::size_t>& shape, std::size_t flat) {
  std::vector<std::size_t> index(shape.size());
  for (std::size_t k = shape.size(); k-- > 0;) {
    index[k] = flat % shape[k];
    flat /= shape[k];
  }
  return index;
}

// Python's repr of the shape tuple: (3,) and (3, 4).
std::string shape_text(const std::vector<std::size_t>& shape) {
  return shape.size() == 1 ? fmt::format("({},)", shape[0]) : fmt::format("({})", fmt::join(shape, ", "));
}

// Checks the magic, the version and the header length field in `head` (the first bytes of
// a file of `total` bytes, at least kMaxPrefixBytes of them unless the file is shorter) and
// returns where the header ends, which is within the file.
std::size_t header_end(std::span<const unsigned char> head, std::size_t total, const std::string& name) {
  if (total < kMagic.size() || std::memcmp(head.data(), kMagic.data(), kMagic.size()) != 0)
    throw_npy_error(name, "not an .npy file (bad magic; expected \\x93NUMPY)");
  if (total < kMagic.size() + 2) throw_npy_error(name, "truncated: the file ends inside the format version");
  const unsigned major = head[6], minor = head[7];
  if (major < 1 || major > 3 || minor != 0) throw_npy_error(name, fmt::format("unsupported .npy format version {}.{} (1.0, 2.0 or 3.0)", major, minor));
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  const std::size_t prefix = 8 + length_bytes;
  if (total < prefix) throw_npy_error(name, "truncated: the file ends inside the header length");
  const auto header_len = static_cast<std::size_t>(little_endian(head.data() + 8, length_bytes));
  if (header_len > total - prefix)
    throw_npy_error(name, fmt::format("truncated header: the header length says {} bytes, the file has {} after the prefix", header_len, total - prefix));
  if (header_len > kMaxHeaderBytes) throw_npy_error(name, fmt::format("header of {} bytes is implausibly long (at most {})", header_len, kMaxHeaderBytes));
  return prefix + header_len;
}

struct Layout {
  Header header;
  std::size_t data_offset;
  std::size_t data_bytes;
};

// Parses the prefix and header at the start of `head` (which holds at least up to the end
// of the header) of a file of `total` bytes, and checks the data are exactly as long as the
// shape says: shorter is truncation, longer a header that lies about the shape.
Layout parse_layout(std::span<const unsigned char> head, std::size_t total, const std::string& name) {
  const std::size_t end = header_end(head, total, name);
  const std::size_t prefix = head[6] == 1 ? 10 : 12;
  const std::string_view text(reinterpret_cast<const char*>(head.data() + prefix), end - prefix);
  Header h = parse_header(text, name, head[6]);
  const auto data_bytes = checked_byte_count(h.shape, item_size(h.dtype));
  if (!data_bytes) throw_npy_error(name, fmt::format("shape {} is too large: its size in bytes overflows ptrdiff_t", shape_text(h.shape)));
  const std::size_t available = total - end;
  if (available < *data_bytes)
    throw_npy_error(name, fmt::format("truncated data: shape {} needs {} bytes, the file has {}", shape_text(h.shape), *data_bytes, available));
  if (available > *data_bytes)
    throw_npy_error(name, fmt::format("{} bytes of trailing data: shape {} needs {} bytes, the file has {}", available - *data_bytes,
                           shape_text(h.shape), *data_bytes, available));
  return {std::move(h), end, *data_bytes};
}

}  // namespace

NpyArray parse_npy(std::span<const unsigned char> bytes, const std::string& name) {
  const Layout layout = parse_layout(bytes, bytes.size(), name);
  const Header& h = layout.header;
  const std::size_t item = item_size(h.dtype);
  const std::size_t count = layout.data_bytes / item;
  const unsigned char* data = bytes.data() + layout.data_offset;

  // Decode, reordering Fortran-order files to C order.
  NpyArray out{h.shape, h.dtype, std::vector<double>(count)};
  const std::vector<std::size_t> c_pos = h.fortran_order && h.shape.size() > 1 ? fortran_to_c_positions(h.shape, count)
                                                                                : std::vector<std::size_t>{};
  for (std::size_t i = 0; i < count; ++i) out.values[c_pos.empty() ? i : c_pos[i]] = decode(data + i * item, h.dtype);

  // The first non-finite value in C order, as numpy's a.flat would count it.
  for (std::size_t i = 0; i < count; ++i)
    if (!std::isfinite(out.values[i])) throw_npy_error(name, npy_nonfinite_problem(out.values[i], i, h.shape));
  return out;
}

std::string npy_dtype_problem(const std::string& descr) {
  if (descr == "<f4" || descr == "<f8") return {};
  if (descr == ">f4" || descr == ">f8") return fmt::format("big-endian data ('{}') is not supported; save it little-endian", descr);
  if (descr == "|O" || descr == "O" || descr == "<O" || descr == ">O") return "object arrays are not supported";
  return fmt::format("unsupported dtype '{}': only float32 ('<f4') and float64 ('<f8')", escaped(descr));
}

std::string npy_dims_problem(std::size_t dims) {
  if (dims == 0) return "0-d (scalar) arrays are not supported: 1 to 4 dimensions";
  if (dims > kNpyMaxDims) return fmt::format("{}-d arrays are not supported: 1 to 4 dimensions", dims);
  return {};
}

std::string npy_nonfinite_problem(double value, std::size_t flat, const std::vector<std::size_t>& shape) {
  return fmt::format("value {} at flat index {} (index {}, C order) is not finite", value, flat, shape_text(c_index(shape, flat)));
}

namespace {

// Reads from `file` until `bytes` holds `size` bytes.
void read_until(BoundedFile& file, std::vector<unsigned char>& bytes, std::size_t size) {
  const std::size_t old = bytes.size();
  if (size <= old) return;
  bytes.resize(size);
  file.read_at(old, bytes.data() + old, size - old);
}

std::uint64_t byte_bound(double bytes) {
  return bytes >= 1.8e19 ? ~std::uint64_t{0} : static_cast<std::uint64_t>(std::max(bytes, 0.0));
}

}  // namespace

// Opens without blocking (a FIFO or device is refused at once), then reads in three bounded steps,
// prefix, header, data, each sized by what came before and checked against the file's size, so a lying
// length field never causes a large allocation; the data only once the file's bytes and its values (as
// doubles) are known to fit in the memory this process may still use.
NpyArray read_npy(const std::filesystem::path& path) {
  const std::string name = path.string();
  const double avail = available_memory();
  try {
    BoundedFile file(path, byte_bound(avail), "the memory this process may still use");
    const std::size_t size = static_cast<std::size_t>(file.size());
    std::vector<unsigned char> bytes;
    read_until(file, bytes, std::min(size, kMaxPrefixBytes));
    read_until(file, bytes, header_end(bytes, size, name));
    const Layout layout = parse_layout(bytes, size, name);
    const double need = static_cast<double>(size) + static_cast<double>(layout.data_bytes / item_size(layout.header.dtype)) * 8.0;
    if (need > avail)
      throw_npy_error(name, fmt::format("reading it needs about {} (the file and its values as doubles), {} available",
                                        gib_text(need), gib_text(std::max(avail, 0.0))));
    read_until(file, bytes, layout.data_offset + layout.data_bytes);
    file.expect_end();
    return parse_npy(bytes, name);
  } catch (const BoundedFileError& e) {
    throw_npy_error(name, e.problem());
  }
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

  // numpy marks an array Fortran-ordered only when it is not also C-contiguous: never for
  // 1-D, empty, or shapes with at most one dimension above 1, where both orders coincide.
  const std::size_t long_axes = static_cast<std::size_t>(std::count_if(array.shape.begin(), array.shape.end(), [](std::size_t s) { return s > 1; }));
  const bool fortran = options.fortran_order && !array.values.empty() && long_axes > 1;

  // The header exactly as numpy.lib.format._write_array_header and _wrap_header build it.
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': {}, 'shape': {}, }}", descr_of(array.dtype),
                                 fortran ? "True" : "False", shape_text(array.shape));
  dict.append(kGrowthAxisMaxDigits - fmt::formatted_size("{}", array.shape[fortran ? array.shape.size() - 1 : 0]), ' ');
  const std::size_t header_len_v1 = dict.size() + 1 + kArrayAlign - (10 + dict.size() + 1) % kArrayAlign;
  const int major = options.major_version != 0 ? options.major_version : header_len_v1 > 0xffff ? 2 : 1;
  const std::size_t prefix = major == 1 ? 10 : 12;
  // Note numpy's quirk: a header that already ends on the boundary gets 64 more spaces.
  dict.append(kArrayAlign - (prefix + dict.size() + 1) % kArrayAlign, ' ');
  dict.push_back('\n');
  if (major == 1 && dict.size() > 0xffff) throw std::invalid_argument("format_npy: header too long for format 1.0");

  std::string out(kMagic);
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  for (std::size_t i = 0; i < prefix - 8; ++i) out.push_back(static_cast<char>((dict.size() >> (8 * i)) & 0xff));
  out += dict;

  // Values in file order: C order as stored, or transposed to Fortran order.
  const std::size_t count = array.values.size();
  const std::vector<std::size_t> c_pos = fortran ? fortran_to_c_positions(array.shape, count) : std::vector<std::size_t>{};
  out.reserve(out.size() + *data_bytes);
  for (std::size_t i = 0; i < count; ++i) {
    const double v = array.values[c_pos.empty() ? i : c_pos[i]];
    if (!std::isfinite(v)) throw std::invalid_argument(fmt::format("format_npy: value {} is not finite", v));
    std::uint64_t bits;
    if (array.dtype == NpyDtype::float32) {
      const auto f = static_cast<float>(v);
      if (!std::isfinite(f)) throw std::invalid_argument(fmt::format("format_npy: value {} overflows float32", v));
      bits = std::bit_cast<std::uint32_t>(f);
    } else if (array.dtype == NpyDtype::int32) {
      if (v != std::floor(v) || v < -2147483648.0 || v > 2147483647.0)
        throw std::invalid_argument(fmt::format("format_npy: value {} is not an int32", v));
      bits = std::bit_cast<std::uint32_t>(static_cast<std::int32_t>(v));
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
  if (!std::isfinite(t)) throw_npy_error(name, fmt::format("value {} overflows {}", v, sizeof(T) == 4 ? "float32" : "float64"));
  return t;
}

Eigen::Index as_index(std::size_t s, const std::string& name) {
  if (s > static_cast<std::size_t>(std::numeric_limits<Eigen::Index>::max())) throw_npy_error(name, "dimension too large");
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
    throw_npy_error(name, fmt::format("expected a matrix (2-D array), got shape {}", shape_text(array.shape)));
  const Eigen::Index rows = as_index(array.shape[0], name);
  const Eigen::Index cols = array.dims() == 2 ? as_index(array.shape[1], name) : 1;
  Mat<T> m(rows, cols);
  for (Eigen::Index i = 0; i < rows; ++i)
    for (Eigen::Index j = 0; j < cols; ++j) m(i, j) = narrow<T>(array.values[static_cast<std::size_t>(i * cols + j)], name);
  return m;
}

std::string head_stack_shape_problem(const std::vector<std::size_t>& shape) {
  if (shape.size() < 2 || shape.size() > kNpyMaxDims)
    return fmt::format("expected a (batch, heads, n, d) array, got shape {}", shape_text(shape));
  // Missing leading axes are 1: (n, d) is one head, (heads, n, d) one batch.
  const std::vector<std::size_t> full = head_stack_shape(shape);
  if (full[0] == 0 || full[1] == 0) return fmt::format("batch and heads must be at least 1, got shape {}", shape_text(shape));
  // Checked before the stack is allocated: an empty array's header costs nothing to write, but
  // (1, 300000000, 0, 8) would otherwise allocate 3e8 empty matrices (gigabytes) before any check.
  if (full[2] == 0 || full[3] == 0)
    return fmt::format("has n = {} rows of d = {} columns (shape {}); both must be at least 1", full[2], full[3], shape_text(shape));
  return {};
}

std::vector<std::size_t> head_stack_shape(const std::vector<std::size_t>& shape) {
  std::vector<std::size_t> full(kNpyMaxDims - std::min(shape.size(), kNpyMaxDims), 1);
  full.insert(full.end(), shape.begin(), shape.end());
  return full;
}

template <typename T>
HeadStack<T> head_stack_from_npy(const NpyArray& array, const std::string& name) {
  if (const std::string problem = head_stack_shape_problem(array.shape); !problem.empty()) throw_npy_error(name, problem);
  const std::vector<std::size_t> full = head_stack_shape(array.shape);
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
