// IDX files (the MNIST format): a strict reader for unsigned-byte images and labels, gzip or raw.
//
// The format (http://yann.lecun.com/exdb/mnist/, "FILE FORMATS"): a 4-byte magic 0x00 0x00
// <type> <dimension count> (type 0x08 is unsigned byte), then each dimension's size as a
// big-endian u32, then the data, row-major. Images are 0x00000803 (count, rows, cols), labels
// 0x00000801 (count). Debian's dataset-fashion-mnist ships them gzip-compressed.
#include "attnlab/io/idx.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <limits>
#include <memory>
#include <zlib.h>

#include "attnlab/io/bounded_file.hpp"
#include "attnlab/io/memory_budget.hpp"

namespace attnlab {
namespace {

namespace fs = std::filesystem;

constexpr char kPackageHint[] = "Fashion-MNIST comes with Debian's package: apt-get install dataset-fashion-mnist";

// zlib's FAQ: "the limit [of deflate's compression factor] is 1032:1". A gzip file of c bytes
// therefore decompresses to at most 1032 c bytes, which bounds what a header may ask for.
constexpr std::uint64_t kMaxDeflateRatio = 1032;
constexpr std::uint64_t kPendingSlack = 1024;
// Data are read in pieces of this size, so a buffer grows only as the bytes arrive.
constexpr std::size_t kChunk = std::size_t{1} << 20;

[[noreturn]] void throw_idx_error(const std::string& path, const std::string& problem) { throw IdxError(path + ": " + problem); }

// A stream of the file's (decompressed) bytes.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to n bytes into dst; fewer only at the end of the data.
  virtual std::size_t read(std::uint8_t* dst, std::size_t n) = 0;
  // An upper bound on the bytes left to read, known without reading them.
  virtual std::uint64_t max_remaining() const = 0;
  // True when max_remaining() is exact (an uncompressed file).
  virtual bool exact() const = 0;
};

class RawSource final : public ByteSource {
 public:
  RawSource(std::vector<std::uint8_t> bytes) : bytes_(std::move(bytes)) {}
  std::size_t read(std::uint8_t* dst, std::size_t n) override {
    const std::size_t k = std::min(n, bytes_.size() - pos_);
    std::copy_n(bytes_.data() + pos_, k, dst);
    pos_ += k;
    return k;
  }
  std::uint64_t max_remaining() const override { return bytes_.size() - pos_; }
  bool exact() const override { return true; }

 private:
  std::vector<std::uint8_t> bytes_;
  std::size_t pos_ = 0;
};

// gzip (RFC 1952) through zlib's inflate, which checks every member's CRC-32 and length.
// Members may follow one another (as gzip -d accepts); anything else after the last one is corrupt.
class GzipSource final : public ByteSource {
 public:
  GzipSource(std::vector<std::uint8_t> compressed, std::string path) : in_(std::move(compressed)), path_(std::move(path)) {
    // 16 + MAX_WBITS: a gzip wrapper only (no zlib or raw deflate streams).
    if (inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) throw_idx_error(path_, "zlib could not start inflating (out of memory)");
  }
  ~GzipSource() override { inflateEnd(&zs_); }
  GzipSource(const GzipSource&) = delete;
  GzipSource& operator=(const GzipSource&) = delete;

  std::size_t read(std::uint8_t* dst, std::size_t n) override {
    std::size_t produced = 0;
    while (produced < n) {
      refill();
      if (member_ended_) {
        if (zs_.avail_in == 0) break;  // the end of the last member is the end of the data
        inflateReset(&zs_);
        member_ended_ = false;
      }
      // avail_out is a 32-bit count: ask for at most UINT_MAX bytes at a time.
      const std::size_t want = std::min<std::size_t>(n - produced, UINT_MAX);
      zs_.next_out = dst + produced;
      zs_.avail_out = static_cast<uInt>(want);
      const int ret = inflate(&zs_, Z_NO_FLUSH);
      produced += want - zs_.avail_out;
      if (ret == Z_STREAM_END) {
        member_ended_ = true;
      } else if (ret == Z_BUF_ERROR) {
        // No progress with room to write: the input ran out inside a member.
        throw_idx_error(path_, "truncated gzip data: the file ends before the end of its compressed stream");
      } else if (ret != Z_OK) {
        throw_idx_error(path_, fmt::format("corrupt gzip data ({})", zs_.msg != nullptr ? zs_.msg : zError(ret)));
      }
    }
    return produced;
  }
  std::uint64_t max_remaining() const override {
    // Plus a match inflate may have decoded but not yet copied out (at most 258 bytes).
    return (static_cast<std::uint64_t>(in_.size()) - offset_ + zs_.avail_in) * kMaxDeflateRatio + kPendingSlack;
  }
  bool exact() const override { return false; }
  std::size_t compressed_size() const { return in_.size(); }

 private:
  // avail_in is a 32-bit count too: hand the input over in pieces.
  void refill() {
    if (zs_.avail_in > 0 || offset_ == in_.size()) return;
    const std::size_t k = std::min<std::size_t>(in_.size() - offset_, UINT_MAX);
    zs_.next_in = in_.data() + offset_;
    zs_.avail_in = static_cast<uInt>(k);
    offset_ += k;
  }

  std::vector<std::uint8_t> in_;
  std::string path_;
  z_stream zs_{};
  std::size_t offset_ = 0;
  bool member_ended_ = false;
};

std::vector<std::uint8_t> read_file(const std::string& path) {
  // Bounded and non-blocking: a FIFO or device is refused at once, a file larger than the memory left
  // before it is read.
  const double avail = available_memory();
  try {
    return read_bounded_bytes(path, avail >= 1.8e19 ? ~std::uint64_t{0} : static_cast<std::uint64_t>(std::max(avail, 0.0)),
                              "the memory this process may still use");
  } catch (const BoundedFileError& e) {
    if (e.problem() == "no such file") throw_idx_error(path, fmt::format("no such file ({})", kPackageHint));
    if (e.problem().starts_with("is a directory")) throw_idx_error(path, "is a directory, not an IDX file");
    throw_idx_error(path, e.problem());
  }
}

std::unique_ptr<ByteSource> make_source(std::vector<std::uint8_t> bytes, const std::string& path) {
  // gzip's magic 1f 8b; an IDX file starts with 00 00.
  if (bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) return std::make_unique<GzipSource>(std::move(bytes), path);
  return std::make_unique<RawSource>(std::move(bytes));
}

std::string plural(std::uint64_t n, const char* one, const char* many) { return fmt::format("{} {}", n, n == 1 ? one : many); }

struct Parsed {
  std::vector<std::uint32_t> dims;
  std::vector<std::uint8_t> data;
};

// Parses an unsigned-byte IDX file's bytes (`path` names it in errors) of `ndims` dimensions; `what`
// names the kind ("an image file").
Parsed parse_idx(std::vector<std::uint8_t> bytes, const std::string& path, unsigned ndims, const char* what) {
  const auto source = make_source(std::move(bytes), path);
  std::array<std::uint8_t, 4> magic{};
  const std::size_t got_magic = source->read(magic.data(), magic.size());
  if (got_magic < magic.size()) throw_idx_error(path, fmt::format("truncated header: the data end after {} of the 4 magic bytes", got_magic));
  const std::uint32_t expected_magic = 0x0800u | ndims;
  const std::uint32_t m = (std::uint32_t{magic[0]} << 24) | (std::uint32_t{magic[1]} << 16) | (std::uint32_t{magic[2]} << 8) | magic[3];
  if (magic[0] != 0 || magic[1] != 0)
    throw_idx_error(path, fmt::format("not an IDX file: magic 0x{:08x}, expected 0x{:08x} ({})", m, expected_magic, what));
  if (magic[2] != 0x08)
    throw_idx_error(path, fmt::format("IDX data type 0x{:02x} (magic 0x{:08x}); only unsigned bytes (0x08) are read", magic[2], m));
  if (magic[3] != ndims)
    throw_idx_error(path, fmt::format("{} in the header (magic 0x{:08x}), expected {} ({})", plural(magic[3], "dimension", "dimensions"), m, ndims, what));

  Parsed out;
  std::uint64_t need = 1;
  bool overflow = false;
  for (unsigned k = 0; k < ndims; ++k) {
    std::array<std::uint8_t, 4> b{};
    const std::size_t got = source->read(b.data(), b.size());
    if (got < b.size()) throw_idx_error(path, fmt::format("truncated header: the data end inside dimension {} of {}", k + 1, ndims));
    const std::uint32_t d = (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | b[3];
    out.dims.push_back(d);
    if (d != 0 && need > std::numeric_limits<std::uint64_t>::max() / d) overflow = true;
    need *= d;
  }
  for (unsigned k = 1; k < ndims; ++k)
    if (out.dims[k] == 0) throw_idx_error(path, fmt::format("dimension {} of the header is 0", k + 1));
  // "3 x 28 x 28 = 2352 bytes", or "7 bytes" for one dimension.
  const std::string need_text = overflow ? fmt::format("{} = more than 2^64 bytes", fmt::join(out.dims, " x "))
                                : ndims == 1 ? fmt::format("{} bytes", need)
                                             : fmt::format("{} = {} bytes", fmt::join(out.dims, " x "), need);

  // Before allocating anything: can the file hold what the header asks for?
  const std::uint64_t bound = source->max_remaining();
  if (overflow || need > bound) {
    if (source->exact()) throw_idx_error(path, fmt::format("truncated data: the header says {}, the file has {}", need_text, bound));
    throw_idx_error(path, fmt::format("the header says {}, more than this {}-byte gzip file can hold (deflate expands at most {}:1)", need_text,
                           static_cast<const GzipSource&>(*source).compressed_size(), kMaxDeflateRatio));
  }
  if (source->exact() && bound > need)
    throw_idx_error(path, fmt::format("{} of trailing data: the header says {}, the file has {}", plural(bound - need, "byte", "bytes"), need_text, bound));
  if (need > static_cast<std::uint64_t>(std::numeric_limits<std::ptrdiff_t>::max())) throw_idx_error(path, "data too large for this machine");
  // A gzip file may declare (and hold) up to 1032 times its size: held in memory, the data must fit in what
  // this process may still use, checked before the first byte is inflated.
  if (const double avail = available_memory(); static_cast<double>(need) > avail)
    throw_idx_error(path, fmt::format("the header says {}, more than the {} this process may still use", need_text,
                                      gib_text(std::max(avail, 0.0))));

  // The buffer grows only as decompressed bytes arrive.
  const auto total = static_cast<std::size_t>(need);
  while (out.data.size() < total) {
    const std::size_t old = out.data.size();
    const std::size_t want = std::min(kChunk, total - old);
    out.data.resize(old + want);
    const std::size_t got = source->read(out.data.data() + old, want);
    if (got < want)
      throw_idx_error(path, fmt::format("truncated data: the header says {}, the file has {}", need_text, old + got));
  }
  // Past the declared size, at most one piece more is inflated: a few trailing bytes are counted, a
  // stream that goes on (a bomb behind a small header) is stopped there.
  std::vector<std::uint8_t> scratch(kChunk);
  const std::size_t extra = source->read(scratch.data(), scratch.size());
  if (extra == kChunk && source->read(scratch.data(), 1) > 0)
    throw_idx_error(path, fmt::format("more than {} of trailing data: the header says {}; reading stopped there",
                                      plural(extra, "byte", "bytes"), need_text));
  if (extra > 0)
    throw_idx_error(path, fmt::format("{} of trailing data: the header says {}, the file has {}", plural(extra, "byte", "bytes"), need_text, need + extra));
  return out;
}

// `dir`/`name`.gz, else `dir`/`name` uncompressed; a missing file names the Debian package.
std::string find_file(const std::string& dir, const std::string& name) {
  const fs::path gz = fs::path(dir) / (name + ".gz");
  const fs::path raw = fs::path(dir) / name;
  std::error_code ec;
  if (fs::exists(gz, ec)) return gz.string();
  if (fs::exists(raw, ec)) return raw.string();
  throw_idx_error(gz.string(), fmt::format("no such file (nor {} uncompressed); {}", name, kPackageHint));
}

}  // namespace

IdxImages parse_idx_images(std::vector<std::uint8_t> bytes, const std::string& name) {
  Parsed p = parse_idx(std::move(bytes), name, 3, "an image file: count, rows, cols");
  return {p.dims[0], p.dims[1], p.dims[2], std::move(p.data)};
}

std::vector<std::uint8_t> parse_idx_labels(std::vector<std::uint8_t> bytes, const std::string& name) {
  Parsed p = parse_idx(std::move(bytes), name, 1, "a label file: count");
  const auto bad = std::find_if(p.data.begin(), p.data.end(), [](std::uint8_t v) { return v >= kIdxClasses; });
  if (bad != p.data.end())
    throw_idx_error(name, fmt::format("label {} at index {} is not a class 0 to {}", *bad, bad - p.data.begin(), kIdxClasses - 1));
  return std::move(p.data);
}

IdxImages read_idx_images(const std::string& path) { return parse_idx_images(read_file(path), path); }

std::vector<std::uint8_t> read_idx_labels(const std::string& path) { return parse_idx_labels(read_file(path), path); }

FashionMnist load_fashion_mnist(const std::string& dir) {
  FashionMnist out;
  const auto load = [&dir](const char* split, IdxImages& images, std::vector<std::uint8_t>& labels) {
    const std::string images_path = find_file(dir, fmt::format("{}-images-idx3-ubyte", split));
    const std::string labels_path = find_file(dir, fmt::format("{}-labels-idx1-ubyte", split));
    images = read_idx_images(images_path);
    // A valid IDX file, but no data set: accuracy and its interval need at least one image.
    if (images.count == 0)
      throw_idx_error(images_path, fmt::format("0 images: the {} set needs at least one", std::string(split) == "train" ? "training" : "test"));
    labels = read_idx_labels(labels_path);
    if (static_cast<std::int64_t>(labels.size()) != images.count)
      throw_idx_error(labels_path, fmt::format("{} but {} holds {}", plural(labels.size(), "label", "labels"), images_path,
                                    plural(images.count, "image", "images")));
    return images_path;
  };
  load("train", out.train_images, out.train_labels);
  const std::string test_path = load("t10k", out.test_images, out.test_labels);
  if (out.test_images.rows != out.train_images.rows || out.test_images.cols != out.train_images.cols)
    throw_idx_error(test_path, fmt::format("images of {} x {}, but the training images are {} x {}", out.test_images.rows, out.test_images.cols,
                                out.train_images.rows, out.train_images.cols));
  return out;
}

}  // namespace attnlab
