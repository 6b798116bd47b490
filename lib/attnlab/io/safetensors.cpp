// safetensors files: the strict reader and the writer (safetensors.hpp).
//
// Every bound is checked before it is used, as the reference reader (huggingface/safetensors,
// safetensors/src/tensor.rs: Metadata::validate) does: the header length against the file and a fixed
// bound, each shape's size (with overflow checks) against its range, the ranges against the data and
// against each other (sorted, they must tile the data exactly: no overlap, no gap, nothing after).
#include "attnlab/io/safetensors.hpp"

#include <Eigen/Core>  // Eigen::half and Eigen::bfloat16: exact widening, rounding to nearest even
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <limits>
#include <optional>
#include <type_traits>

#include "attnlab/io/atomic_file.hpp"
#include "attnlab/io/bounded_file.hpp"
#include "attnlab/io/json_reader.hpp"
#include "attnlab/io/printable.hpp"

namespace attnlab {

namespace {

struct DtypeInfo {
  SafetensorsDtype dtype;
  const char* name;
  std::size_t bytes;
};
constexpr std::array<DtypeInfo, 16> kDtypes = {{{SafetensorsDtype::BOOL, "BOOL", 1},
                                                 {SafetensorsDtype::U8, "U8", 1},
                                                 {SafetensorsDtype::I8, "I8", 1},
                                                 {SafetensorsDtype::F8_E5M2, "F8_E5M2", 1},
                                                 {SafetensorsDtype::F8_E4M3, "F8_E4M3", 1},
                                                 {SafetensorsDtype::F8_E8M0, "F8_E8M0", 1},
                                                 {SafetensorsDtype::I16, "I16", 2},
                                                 {SafetensorsDtype::U16, "U16", 2},
                                                 {SafetensorsDtype::F16, "F16", 2},
                                                 {SafetensorsDtype::BF16, "BF16", 2},
                                                 {SafetensorsDtype::I32, "I32", 4},
                                                 {SafetensorsDtype::U32, "U32", 4},
                                                 {SafetensorsDtype::F32, "F32", 4},
                                                 {SafetensorsDtype::I64, "I64", 8},
                                                 {SafetensorsDtype::U64, "U64", 8},
                                                 {SafetensorsDtype::F64, "F64", 8}}};

const DtypeInfo& info(SafetensorsDtype d) {
  for (const auto& i : kDtypes)
    if (i.dtype == d) return i;
  throw std::logic_error("safetensors: unknown dtype enumerator");
}

std::string st_quoted(std::string_view s) { return fmt::format("\"{}\"", escaped(s)); }

[[noreturn]] void st_refuse(const std::string& file, const std::string& problem) {
  throw SafetensorsError(escaped(file, true) + ": " + problem);
}

// RFC 3629 UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF); the position of the
// first bad byte, or npos.
std::size_t invalid_utf8_at(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = 0;
    std::uint32_t cp = 0, min = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07, min = 0x10000;
    } else {
      return i;
    }
    if (i + len > s.size()) return i;
    for (std::size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::string_view::npos;
}

// A JSON number written as a non-negative integer ("8", never "8.0" or "8e0") within 2^53 (exact in a double),
// else nullopt.
std::optional<std::uint64_t> json_count(const Json& j) {
  const double* d = std::get_if<double>(&j.v);
  if (d == nullptr || !j.integer || !(*d >= 0) || *d > 9007199254740992.0 || *d != std::floor(*d)) return std::nullopt;
  return static_cast<std::uint64_t>(*d);
}

std::string st_shape_text(const std::vector<std::uint64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

SafetensorsTensor parse_entry(const std::string& file, const std::string& name, const Json& j, std::uint64_t data_bytes) {
  const std::string where = "tensor " + st_quoted(name);
  const auto* obj = std::get_if<std::shared_ptr<JsonObject>>(&j.v);
  if (obj == nullptr) st_refuse(file, where + " is not an object {\"dtype\", \"shape\", \"data_offsets\"}");
  for (const auto& [key, unused] : **obj)
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      st_refuse(file, where + ": unknown key " + st_quoted(key) + " (only \"dtype\", \"shape\" and \"data_offsets\")");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if ((*obj)->count(key) == 0) st_refuse(file, where + ": no \"" + key + "\"");
  SafetensorsTensor t;
  t.name = name;
  const auto* dtype = std::get_if<std::string>(&(*obj)->at("dtype").v);
  if (dtype == nullptr) st_refuse(file, where + ": \"dtype\" is not a string");
  const auto known = std::find_if(kDtypes.begin(), kDtypes.end(), [&](const DtypeInfo& i) { return *dtype == i.name; });
  if (known == kDtypes.end()) st_refuse(file, where + ": unknown dtype " + st_quoted(*dtype));
  t.dtype = known->dtype;
  const auto* shape = std::get_if<std::shared_ptr<JsonArray>>(&(*obj)->at("shape").v);
  if (shape == nullptr) st_refuse(file, where + ": \"shape\" is not an array");
  if ((*shape)->size() > kSafetensorsMaxDims)
    st_refuse(file, fmt::format("{}: shape has {} axes (at most {})", where, (*shape)->size(), kSafetensorsMaxDims));
  for (const Json& dim : **shape) {
    const auto n = json_count(dim);
    if (!n) st_refuse(file, where + ": a shape entry is not a non-negative integer (at most 2^53)");
    t.shape.push_back(*n);
  }
  const auto* offsets = std::get_if<std::shared_ptr<JsonArray>>(&(*obj)->at("data_offsets").v);
  if (offsets == nullptr || (*offsets)->size() != 2)
    st_refuse(file, where + ": \"data_offsets\" is not an array [begin, end]");
  const auto begin = json_count((**offsets)[0]), end = json_count((**offsets)[1]);
  if (!begin || !end) st_refuse(file, where + ": \"data_offsets\" are not non-negative integers (at most 2^53)");
  if (*begin > *end) st_refuse(file, fmt::format("{}: data_offsets [{}, {}] end before they begin", where, *begin, *end));
  if (*end > data_bytes)
    st_refuse(file, fmt::format("{}: data_offsets [{}, {}] reach past the {} bytes of data", where, *begin, *end, data_bytes));
  t.begin = *begin;
  t.end = *end;
  // elements x dtype size, each product checked: a hostile shape must not wrap around (an empty axis
  // makes any shape empty, whatever the others say).
  std::uint64_t bytes = info(t.dtype).bytes;
  bool overflow = false;
  if (std::find(t.shape.begin(), t.shape.end(), 0) != t.shape.end()) bytes = 0;
  else
    for (const std::uint64_t dim : t.shape) {
      if (bytes > std::numeric_limits<std::uint64_t>::max() / dim) {
        overflow = true;
        break;
      }
      bytes *= dim;
    }
  if (overflow || bytes != t.end - t.begin)
    st_refuse(file, fmt::format("{}: shape {} of {} needs {} bytes, but data_offsets [{}, {}] hold {}", where,
                             st_shape_text(t.shape), info(t.dtype).name, overflow ? "more than 2^64" : std::to_string(bytes),
                             t.begin, t.end, t.end - t.begin));
  return t;
}

}  // namespace

std::string to_string(SafetensorsDtype dtype) { return info(dtype).name; }
std::size_t dtype_bytes(SafetensorsDtype dtype) { return info(dtype).bytes; }
bool is_float_dtype(SafetensorsDtype d) {
  return d == SafetensorsDtype::F64 || d == SafetensorsDtype::F32 || d == SafetensorsDtype::F16 || d == SafetensorsDtype::BF16;
}

std::uint64_t SafetensorsTensor::elements() const {
  std::uint64_t n = 1;
  for (const std::uint64_t dim : shape) n *= dim;  // the header check bounded the product
  return n;
}

std::uint64_t SafetensorsTensor::row_elements() const {
  std::uint64_t n = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

const SafetensorsTensor* SafetensorsHeader::find(const std::string& name) const {
  const auto it = std::lower_bound(tensors.begin(), tensors.end(), name,
                                   [](const SafetensorsTensor& t, const std::string& n) { return t.name < n; });
  return it != tensors.end() && it->name == name ? &*it : nullptr;
}

SafetensorsHeader parse_safetensors_header(std::string_view json, std::uint64_t data_bytes, const std::string& file) {
  if (const std::size_t bad = invalid_utf8_at(json); bad != std::string_view::npos)
    st_refuse(file, fmt::format("header: not UTF-8 at byte {}", bad));
  Json root;
  try {
    root = parse_json(std::string(json));
  } catch (const std::runtime_error& e) {
    st_refuse(file, std::string("header: ") + escaped(e.what()));
  }
  const auto* obj = std::get_if<std::shared_ptr<JsonObject>>(&root.v);
  if (obj == nullptr) st_refuse(file, "header: not a JSON object of tensors");
  SafetensorsHeader h;
  for (const auto& [name, value] : **obj) {
    if (name == "__metadata__") {
      const auto* meta = std::get_if<std::shared_ptr<JsonObject>>(&value.v);
      if (meta == nullptr) st_refuse(file, "header: \"__metadata__\" is not an object");
      for (const auto& [key, text] : **meta) {
        const auto* s = std::get_if<std::string>(&text.v);
        if (s == nullptr) st_refuse(file, "header: \"__metadata__\" entry " + st_quoted(key) + " is not a string");
        h.metadata[key] = *s;
      }
      continue;
    }
    h.tensors.push_back(parse_entry(file, name, value, data_bytes));  // a repeated name: parse_json refused it
  }
  // Sorted by range, the tensors must tile [0, data_bytes) exactly.
  std::vector<const SafetensorsTensor*> by_range;
  for (const auto& t : h.tensors) by_range.push_back(&t);
  std::sort(by_range.begin(), by_range.end(), [](const SafetensorsTensor* a, const SafetensorsTensor* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  std::uint64_t covered = 0;
  const SafetensorsTensor* previous = nullptr;
  for (const SafetensorsTensor* t : by_range) {
    if (t->begin < covered)
      st_refuse(file, fmt::format("tensor {}: data_offsets [{}, {}] overlap tensor {}'s [{}, {}]", st_quoted(t->name), t->begin,
                               t->end, st_quoted(previous->name), previous->begin, previous->end));
    if (t->begin > covered)
      st_refuse(file, fmt::format("tensor {}: data_offsets begin at {}, leaving bytes [{}, {}) of the data unused", st_quoted(t->name),
                               t->begin, covered, t->begin));
    covered = t->end;
    previous = t;
  }
  if (covered != data_bytes)
    st_refuse(file, fmt::format("{} bytes of data after the last tensor's range (which ends at {})", data_bytes - covered, covered));
  return h;
}

// ---- Reading ----

namespace detail {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual std::uint64_t size() const = 0;
  // Reads exactly `count` bytes at `offset` into `out`, or throws SafetensorsError naming `file`.
  virtual void read(std::uint64_t offset, std::size_t count, unsigned char* out, const std::string& file) const = 0;
};

}  // namespace detail

namespace {

// A regular file opened without blocking, its size fixed when opened (BoundedFile: a FIFO or device is
// refused at once); reads by pread (thread-safe, no shared offset).
class FileSource : public detail::ByteSource {
 public:
  explicit FileSource(const std::filesystem::path& path) : file_(open(path)) {}

  std::uint64_t size() const override { return file_.size(); }
  void read(std::uint64_t offset, std::size_t count, unsigned char* out, const std::string& file) const override {
    try {
      file_.read_at(offset, out, count);
    } catch (const BoundedFileError& e) {
      st_refuse(file, e.problem());
    }
  }

 private:
  static BoundedFile open(const std::filesystem::path& path) {
    try {
      // No bound on the size: tensors are read by ranges, never the file whole.
      return BoundedFile(path, std::numeric_limits<std::uint64_t>::max(), "any size");
    } catch (const BoundedFileError& e) {
      st_refuse(path.string(), e.problem());
    }
  }
  BoundedFile file_;
};

class MemorySource : public detail::ByteSource {
 public:
  explicit MemorySource(std::span<const unsigned char> bytes) : bytes_(bytes) {}
  std::uint64_t size() const override { return bytes_.size(); }
  void read(std::uint64_t offset, std::size_t count, unsigned char* out, const std::string& file) const override {
    if (offset > bytes_.size() || count > bytes_.size() - offset)
      st_refuse(file, fmt::format("cannot read {} bytes at offset {}: the data end at {}", count, offset, bytes_.size()));
    std::memcpy(out, bytes_.data() + offset, count);
  }

 private:
  std::span<const unsigned char> bytes_;
};

// The format is little-endian, and so is every machine this builds for (x86-64, AArch64 as Linux runs it).
static_assert(std::endian::native == std::endian::little, "safetensors.cpp reads and writes little-endian bytes as they are");

template <typename U>
U load_le(const unsigned char* p) {
  U v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// `count` stored values widened to T (exact: every F16, BF16 and F32 value is a float, every one a double).
// The dtype is chosen once per piece, not per value, so each loop is a plain vectorisable conversion.
template <typename T>
void widen(SafetensorsDtype dtype, const unsigned char* in, std::size_t count, T* out) {
  switch (dtype) {
    case SafetensorsDtype::BF16:  // a bfloat16 is the top half of a float32
      for (std::size_t i = 0; i < count; ++i)
        out[i] = static_cast<T>(std::bit_cast<float>(static_cast<std::uint32_t>(load_le<std::uint16_t>(in + 2 * i)) << 16));
      return;
    case SafetensorsDtype::F16:
      for (std::size_t i = 0; i < count; ++i)
        out[i] = static_cast<T>(static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(load_le<std::uint16_t>(in + 2 * i))));
      return;
    case SafetensorsDtype::F32:
      for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<T>(std::bit_cast<float>(load_le<std::uint32_t>(in + 4 * i)));
      return;
    case SafetensorsDtype::F64:
      for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<T>(std::bit_cast<double>(load_le<std::uint64_t>(in + 8 * i)));
      return;
    default: throw std::logic_error("widen: not a float dtype");
  }
}

// Raw bytes are read in pieces of at most this many, so a tensor of any size costs this much beyond its values.
constexpr std::size_t kReadChunkBytes = std::size_t(1) << 20;

}  // namespace

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path)
    : name_(path.string()), source_(std::make_unique<FileSource>(path)) {
  open_header();
}

SafetensorsFile::SafetensorsFile(std::span<const unsigned char> bytes, std::string name)
    : name_(std::move(name)), source_(std::make_unique<MemorySource>(bytes)) {
  open_header();
}

SafetensorsFile::~SafetensorsFile() = default;
SafetensorsFile::SafetensorsFile(SafetensorsFile&&) noexcept = default;
SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&&) noexcept = default;

void SafetensorsFile::open_header() {
  const std::uint64_t size = source_->size();
  if (size < 8) st_refuse(name_, fmt::format("{} bytes: shorter than the 8-byte header length", size));
  unsigned char prefix[8];
  source_->read(0, 8, prefix, name_);
  const auto n = load_le<std::uint64_t>(prefix);
  if (n > kSafetensorsMaxHeaderBytes)
    st_refuse(name_, fmt::format("header length {} is above the bound of {} bytes", n, kSafetensorsMaxHeaderBytes));
  if (n > size - 8) st_refuse(name_, fmt::format("header length {} reaches past the end of the file ({} bytes)", n, size));
  std::string text(static_cast<std::size_t>(n), '\0');
  source_->read(8, text.size(), reinterpret_cast<unsigned char*>(text.data()), name_);
  data_start_ = 8 + n;
  header_ = parse_safetensors_header(text, size - data_start_, name_);
}

const SafetensorsTensor& SafetensorsFile::tensor(const std::string& tensor) const {
  if (const SafetensorsTensor* t = header_.find(tensor)) return *t;
  st_refuse(name_, "no tensor " + st_quoted(tensor));
}

template <typename T>
void SafetensorsFile::read_rows_as(const SafetensorsTensor& t, std::uint64_t first_row, std::uint64_t rows, T* out) const {
  if (header_.find(t.name) != &t) throw std::logic_error("SafetensorsFile::read_rows: the tensor is not this file's");
  if (!is_float_dtype(t.dtype))
    st_refuse(name_, fmt::format("tensor {} has dtype {}; a weight is read from F64, F32, F16 or BF16 only", st_quoted(t.name),
                              to_string(t.dtype)));
  if (std::is_same_v<T, float> && t.dtype == SafetensorsDtype::F64)
    st_refuse(name_, fmt::format("tensor {} is F64, which float cannot hold exactly: read it in double", st_quoted(t.name)));
  if (first_row > t.rows() || rows > t.rows() - first_row)
    st_refuse(name_, fmt::format("tensor {}: rows [{}, {}) asked for, it has {}", st_quoted(t.name), first_row, first_row + rows, t.rows()));
  const std::size_t item = dtype_bytes(t.dtype);
  const std::uint64_t row_bytes = t.row_elements() * item;
  std::uint64_t left = rows * row_bytes, offset = data_start_ + t.begin + first_row * row_bytes;
  std::vector<unsigned char> buffer(static_cast<std::size_t>(std::min<std::uint64_t>(left, kReadChunkBytes)));
  std::uint64_t element = first_row * t.row_elements();
  while (left > 0) {
    const std::size_t count = static_cast<std::size_t>(std::min<std::uint64_t>(left, kReadChunkBytes));
    source_->read(offset, count, buffer.data(), name_);
    const std::size_t values = count / item;
    widen(t.dtype, buffer.data(), values, out);
    bool finite = true;
    for (std::size_t i = 0; i < values; ++i) finite &= std::isfinite(out[i]);  // no early exit: the loop vectorises
    if (!finite)
      for (std::size_t i = 0; i < values; ++i)
        if (!std::isfinite(out[i]))
          st_refuse(name_, nonfinite_weight_problem(t.name, out[i], element + i));
    out += values;
    element += values;
    offset += count;
    left -= count;
  }
}

void SafetensorsFile::read_rows(const SafetensorsTensor& t, std::uint64_t first_row, std::uint64_t rows, float* out) const {
  read_rows_as(t, first_row, rows, out);
}
void SafetensorsFile::read_rows(const SafetensorsTensor& t, std::uint64_t first_row, std::uint64_t rows, double* out) const {
  read_rows_as(t, first_row, rows, out);
}

std::string read_bounded_file(const std::filesystem::path& path, std::uint64_t max_bytes) {
  try {
    return read_bounded_text(path, max_bytes, fmt::format("the {} bytes such a file may have", max_bytes));
  } catch (const BoundedFileError& e) {
    st_refuse(path.string(), e.problem());
  }
}

JsonObject read_bounded_json_object(const std::filesystem::path& path, std::uint64_t max_bytes, const std::string& what) {
  Json root;
  try {
    root = parse_json(read_bounded_file(path, max_bytes));
  } catch (const SafetensorsError&) {
    throw;
  } catch (const std::runtime_error& e) {
    st_refuse(path.string(), escaped(e.what()));
  }
  const auto* obj = std::get_if<std::shared_ptr<JsonObject>>(&root.v);
  if (obj == nullptr) st_refuse(path.string(), "not a JSON object " + what);
  return **obj;
}

// ---- Writing ----

namespace {

template <typename T>
std::string encode(std::span<const T> values, SafetensorsDtype dtype) {
  if (!is_float_dtype(dtype)) throw std::invalid_argument("encode_safetensors_values: " + to_string(dtype) + " is not a float dtype");
  const std::size_t item = dtype_bytes(dtype);
  std::string out(values.size() * item, '\0');
  auto* p = reinterpret_cast<unsigned char*>(out.data());
  for (const T v : values) {
    if (!std::isfinite(v)) throw std::invalid_argument("encode_safetensors_values: a non-finite value");
    auto store = [&](auto bits) { std::memcpy(p, &bits, sizeof bits); };
    // F16 and BF16 round to nearest (ties to even); F16 overflows to infinity above 65504, which is refused.
    auto narrow = [&](auto h) {
      if (!std::isfinite(static_cast<float>(h)))
        throw std::invalid_argument(fmt::format("encode_safetensors_values: {} is beyond {}'s range", v, to_string(dtype)));
      store(Eigen::numext::bit_cast<std::uint16_t>(h));
    };
    switch (dtype) {
      case SafetensorsDtype::BF16: narrow(Eigen::bfloat16(static_cast<float>(v))); break;
      case SafetensorsDtype::F16: narrow(Eigen::half(static_cast<float>(v))); break;
      case SafetensorsDtype::F32: store(std::bit_cast<std::uint32_t>(static_cast<float>(v))); break;
      default: store(std::bit_cast<std::uint64_t>(static_cast<double>(v))); break;
    }
    p += item;
  }
  return out;
}

// A JSON string for a name or metadata text; control characters are refused (the reader takes no \u escapes).
std::string json_text(const std::string& s, const char* what) {
  std::string out = "\"";
  for (const char c : s) {
    if (static_cast<unsigned char>(c) < 0x20) throw std::invalid_argument(std::string("write_safetensors: a control character in ") + what);
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string encode_safetensors_values(std::span<const float> values, SafetensorsDtype dtype) { return encode(values, dtype); }
std::string encode_safetensors_values(std::span<const double> values, SafetensorsDtype dtype) { return encode(values, dtype); }

void write_safetensors(const std::filesystem::path& path, const std::vector<SafetensorsOutput>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<const SafetensorsOutput*> order;
  for (const auto& t : tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) { return a->name < b->name; });
  std::string json = "{";
  if (!metadata.empty()) {
    json += "\"__metadata__\":{";
    // Appended piece by piece: GCC 12 at -O3 took `"," + std::string` for a copy of up to 2^64 bytes
    // (-Wstringop-overflow, a false positive of its range analysis of basic_string::insert).
    for (auto it = metadata.begin(); it != metadata.end(); ++it) {
      if (it != metadata.begin()) json += ',';
      json += json_text(it->first, "metadata");
      json += ':';
      json += json_text(it->second, "metadata");
    }
    json += "}";
  }
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const SafetensorsOutput& t = *order[i];
    if (t.name.empty() || t.name == "__metadata__" || (i > 0 && order[i - 1]->name == t.name))
      throw std::invalid_argument("write_safetensors: empty, reserved or repeated tensor name \"" + t.name + "\"");
    std::uint64_t bytes = dtype_bytes(t.dtype);
    for (const std::uint64_t dim : t.shape) bytes *= dim;
    json += fmt::format("{}{}:{{\"dtype\":\"{}\",\"shape\":{},\"data_offsets\":[{},{}]}}", json.size() > 1 ? "," : "",
                        json_text(t.name, "a tensor name"), to_string(t.dtype), st_shape_text(t.shape), offset, offset + bytes);
    offset += bytes;
  }
  json += "}";
  json.append((8 - json.size() % 8) % 8, ' ');  // the data start on a multiple of 8 bytes, as the reference writes
  write_file_atomically(path, [&](const AtomicPieceWriter& write) {
    const std::uint64_t n = json.size();
    write(std::string_view(reinterpret_cast<const char*>(&n), 8));
    write(json);
    for (const SafetensorsOutput* t : order) {
      const std::string bytes = t->bytes();
      std::uint64_t want = dtype_bytes(t->dtype);
      for (const std::uint64_t dim : t->shape) want *= dim;
      if (bytes.size() != want)
        throw std::invalid_argument(fmt::format("write_safetensors: tensor \"{}\" gave {} bytes, its shape needs {}", t->name,
                                                bytes.size(), want));
      write(bytes);
    }
  });
}

std::string nonfinite_weight_problem(std::string_view tensor, double value, std::uint64_t element) {
  return fmt::format("tensor {} holds a non-finite value ({}) at element {} (C order)", st_quoted(tensor), value, element);
}

}  // namespace attnlab
