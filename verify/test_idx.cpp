// Checks of the IDX reader: small files written here (raw and gzip) read back exactly, every
// malformed file refused with one line naming it, and the installed Fashion-MNIST as published.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>
#include <sys/stat.h>

#include "attnlab/io/idx.hpp"
#include "attnlab/lab/subprocess.hpp"
#include "support.hpp"

using namespace attnlab;
using attnlab::testing::gzip;
using attnlab::testing::ScratchDir;
namespace fs = std::filesystem;

namespace {

using Bytes = std::vector<std::uint8_t>;

void put_u32(Bytes& b, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<std::uint8_t>(v >> shift));
}

// An IDX file: magic, dimensions, data.
Bytes idx_file(std::uint32_t magic, const std::vector<std::uint32_t>& dims, const Bytes& data) {
  Bytes b;
  put_u32(b, magic);
  for (const auto d : dims) put_u32(b, d);
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

Bytes pattern(std::size_t n, unsigned mod = 256) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::uint8_t>((i * 37 + 11) % mod);
  return b;
}

// Bytes that deflate cannot shrink (a linear congruential generator's high bytes).
Bytes noise(std::size_t n) {
  Bytes b(n);
  std::uint32_t x = 12345;
  for (auto& v : b) v = static_cast<std::uint8_t>((x = x * 1664525u + 1013904223u) >> 24);
  return b;
}

Bytes images_file(std::uint32_t count, std::uint32_t rows, std::uint32_t cols) {
  return idx_file(0x803, {count, rows, cols}, pattern(std::size_t{count} * rows * cols));
}

Bytes labels_file(std::uint32_t count) { return idx_file(0x801, {count}, pattern(count, 10)); }

std::string write(const fs::path& path, const Bytes& b) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  REQUIRE(out.good());
  return path.string();
}

// The message of the IdxError that `f` throws, or "" (a failed check) when it throws nothing.
template <typename F>
std::string idx_error(F&& f) {
  try {
    f();
  } catch (const IdxError& e) {
    return e.what();
  }
  FAIL_CHECK("no IdxError thrown");
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// One line, starting with the file's name, saying `problem`.
void check_message(const std::string& message, const std::string& path, const std::string& problem) {
  INFO("message: " << message);
  CHECK(message.rfind(path + ": ", 0) == 0);
  CHECK(message.find('\n') == std::string::npos);
  CHECK(contains(message, problem));
}

void check_images_refused(const fs::path& path, const Bytes& b, const std::string& problem) {
  const std::string p = write(path, b);
  check_message(idx_error([&] { read_idx_images(p); }), p, problem);
}

void check_labels_refused(const fs::path& path, const Bytes& b, const std::string& problem) {
  const std::string p = write(path, b);
  check_message(idx_error([&] { read_idx_labels(p); }), p, problem);
}

std::uint64_t fnv1a64(const std::uint8_t* p, std::size_t n) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

// A Fashion-MNIST directory of small files: `train` and `test` images of rows x cols.
void write_small_dataset(const fs::path& dir, std::uint32_t train, std::uint32_t test, std::uint32_t rows = 3, std::uint32_t cols = 2) {
  write(dir / "train-images-idx3-ubyte.gz", gzip(images_file(train, rows, cols)));
  write(dir / "train-labels-idx1-ubyte.gz", gzip(labels_file(train)));
  write(dir / "t10k-images-idx3-ubyte", images_file(test, rows, cols));  // raw: accepted without .gz
  write(dir / "t10k-labels-idx1-ubyte", labels_file(test));
}

}  // namespace

TEST_CASE("IDX images and labels read back exactly, raw and gzip") {
  ScratchDir dir;
  const Bytes images = images_file(5, 3, 4);
  const Bytes labels = labels_file(5);
  for (const bool compressed : {false, true}) {
    CAPTURE(compressed);
    const auto wrap = [&](const Bytes& b) { return compressed ? gzip(b) : b; };
    const IdxImages im = read_idx_images(write(dir.path() / "im", wrap(images)));
    CHECK(im.count == 5);
    CHECK(im.rows == 3);
    CHECK(im.cols == 4);
    CHECK(im.pixels == pattern(60));
    CHECK(read_idx_labels(write(dir.path() / "lab", wrap(labels))) == pattern(5, 10));
    // An empty file set is valid IDX: no images, no labels.
    const IdxImages none = read_idx_images(write(dir.path() / "none", wrap(images_file(0, 28, 28))));
    CHECK(none.count == 0);
    CHECK(none.rows == 28);
    CHECK(none.pixels.empty());
  }
  // gzip -d accepts concatenated members, and so do we: the data are the members' bytes in order.
  Bytes two = gzip(Bytes(images.begin(), images.begin() + 20));
  const Bytes rest = gzip(Bytes(images.begin() + 20, images.end()));
  two.insert(two.end(), rest.begin(), rest.end());
  CHECK(read_idx_images(write(dir.path() / "two", two)).pixels == pattern(60));
  // Highly compressible data (2 MB of zeros, about 1000:1) are within the bound the reader
  // puts on what a gzip file can hold.
  const Bytes zeros = idx_file(0x803, {200, 100, 100}, Bytes(2'000'000, 0));
  const Bytes packed = gzip(zeros);
  CHECK(packed.size() * 900 < zeros.size());
  CHECK(read_idx_images(write(dir.path() / "zeros", packed)).pixels == Bytes(2'000'000, 0));
}

TEST_CASE("IDX files with a wrong header are refused with one line naming the file") {
  ScratchDir dir;
  const fs::path p = dir.path() / "bad-idx";
  check_images_refused(p, idx_file(0x12345678, {1, 1, 1}, {0}), "not an IDX file: magic 0x12345678, expected 0x00000803");
  write(p, images_file(2, 2, 2));  // control: the same path holding a good file
  CHECK_NOTHROW(read_idx_images(p.string()));
  check_images_refused(p, idx_file(0x0903, {1, 1, 1}, {0}), "IDX data type 0x09");
  check_images_refused(p, labels_file(4), "1 dimension in the header (magic 0x00000801), expected 3");
  check_labels_refused(p, images_file(1, 2, 2), "3 dimensions in the header (magic 0x00000803), expected 1");
  check_images_refused(p, idx_file(0x803, {1, 0, 4}, {}), "dimension 2 of the header is 0");
  check_images_refused(p, idx_file(0x803, {1, 4, 0}, {}), "dimension 3 of the header is 0");
  check_images_refused(p, Bytes{}, "truncated header: the data end after 0 of the 4 magic bytes");
  check_images_refused(p, Bytes{0, 0, 8}, "truncated header: the data end after 3 of the 4 magic bytes");
  check_images_refused(p, Bytes{0, 0, 8, 3, 0, 0, 0, 1, 0, 0}, "truncated header: the data end inside dimension 2 of 3");
  check_labels_refused(p, Bytes{0, 0, 8, 1, 0}, "truncated header: the data end inside dimension 1 of 1");
  check_images_refused(p, gzip(Bytes{0, 0, 8, 3, 0, 0, 0, 1}), "truncated header: the data end inside dimension 2 of 3");
}

TEST_CASE("IDX data shorter or longer than the header says are refused") {
  ScratchDir dir;
  const fs::path p = dir.path() / "bad-idx";
  Bytes images = images_file(3, 4, 5);
  Bytes short_images(images.begin(), images.end() - 1);
  Bytes long_images = images;
  long_images.insert(long_images.end(), {1, 2});
  check_images_refused(p, short_images, "truncated data: the header says 3 x 4 x 5 = 60 bytes, the file has 59");
  check_images_refused(p, long_images, "2 bytes of trailing data: the header says 3 x 4 x 5 = 60 bytes, the file has 62");
  check_images_refused(p, gzip(short_images), "truncated data: the header says 3 x 4 x 5 = 60 bytes, the file has 59");
  check_images_refused(p, gzip(long_images), "2 bytes of trailing data: the header says 3 x 4 x 5 = 60 bytes, the file has 62");
  Bytes labels = labels_file(7);
  check_labels_refused(p, Bytes(labels.begin(), labels.end() - 3), "truncated data: the header says 7 bytes, the file has 4");
  labels.push_back(0);
  check_labels_refused(p, gzip(labels), "1 byte of trailing data: the header says 7 bytes, the file has 8");
}

TEST_CASE("IDX headers asking for more than the file can hold are refused before allocating") {
  ScratchDir dir;
  const fs::path p = dir.path() / "huge-idx";
  const auto start = std::chrono::steady_clock::now();
  // 2^32 - 1 images of 65535 x 65535 (2^80 bytes; overflows 64 bits) and of 28 x 28 (3.4 TB).
  check_images_refused(p, idx_file(0x803, {0xffffffffu, 0xffffu, 0xffffffffu}, pattern(100)),
                       "truncated data: the header says 4294967295 x 65535 x 4294967295 = more than 2^64 bytes, the file has 100");
  check_images_refused(p, idx_file(0x803, {0xffffffffu, 28, 28}, pattern(100)),
                       "truncated data: the header says 4294967295 x 28 x 28 = 3367254359280 bytes, the file has 100");
  const Bytes gz = gzip(idx_file(0x803, {0xffffffffu, 28, 28}, pattern(100)));
  check_images_refused(p, gz, "the header says 4294967295 x 28 x 28 = 3367254359280 bytes, more than this " + std::to_string(gz.size()) +
                                  "-byte gzip file can hold (deflate expands at most 1032:1)");
  check_labels_refused(p, gzip(idx_file(0x801, {0xffffffffu}, pattern(10, 10))), "more than this");
  // A header asking for somewhat more than the data give, within the bound: the buffer grows with
  // the data, and the shortfall is reported.
  check_images_refused(p, gzip(idx_file(0x803, {100000, 10, 10}, noise(20000))),
                       "truncated data: the header says 100000 x 10 x 10 = 10000000 bytes, the file has 20000");
  // No allocation of terabytes was attempted (it would have thrown bad_alloc or taken long).
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
}

TEST_CASE("Corrupt or truncated gzip data are refused") {
  ScratchDir dir;
  const fs::path p = dir.path() / "bad-idx.gz";
  const Bytes good = gzip(images_file(10, 8, 8));
  // The last 8 bytes are the CRC-32 and the length: a changed CRC fails the data check.
  Bytes bad_crc = good;
  bad_crc[bad_crc.size() - 6] ^= 0x55;
  check_images_refused(p, bad_crc, "corrupt gzip data (incorrect data check)");
  Bytes bad_length = good;
  bad_length[bad_length.size() - 2] ^= 0x01;
  check_images_refused(p, bad_length, "corrupt gzip data (incorrect length check)");
  // A damaged deflate block header (the first byte after the 10-byte gzip header).
  Bytes bad_block = good;
  bad_block[10] |= 0x06;  // block type 3: reserved
  check_images_refused(p, bad_block, "corrupt gzip data (invalid block type)");
  // Cut inside the stream or inside the trailer.
  check_images_refused(p, Bytes(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(good.size() / 2)), "truncated");
  check_images_refused(p, Bytes(good.begin(), good.end() - 3), "truncated gzip data: the file ends before the end of its compressed stream");
  // Bytes after the last member that are not another member.
  Bytes garbage = good;
  garbage.insert(garbage.end(), {'x', 'y', 'z', 0});
  check_images_refused(p, garbage, "corrupt gzip data (incorrect header check)");
  Bytes bad_flags = good;
  bad_flags[3] = 0xe0;  // reserved flag bits
  check_images_refused(p, bad_flags, "corrupt gzip data");
  check_images_refused(p, Bytes{0x1f, 0x8b}, "truncated gzip data");
}

TEST_CASE("IDX labels above 9 are refused") {
  ScratchDir dir;
  const fs::path p = dir.path() / "labels";
  CHECK(read_idx_labels(write(p, idx_file(0x801, {3}, {0, 9, 5}))) == Bytes{0, 9, 5});
  check_labels_refused(p, idx_file(0x801, {4}, {0, 9, 10, 3}), "label 10 at index 2 is not a class 0 to 9");
  check_labels_refused(p, gzip(idx_file(0x801, {2}, {255, 1})), "label 255 at index 0 is not a class 0 to 9");
}

TEST_CASE("Missing IDX files name the Debian package") {
  ScratchDir dir;
  const std::string missing = (dir.path() / "nope-idx3-ubyte.gz").string();
  check_message(idx_error([&] { read_idx_images(missing); }), missing, "no such file (Fashion-MNIST comes with Debian's package: apt-get install dataset-fashion-mnist)");
  check_message(idx_error([&] { read_idx_labels(missing); }), missing, "apt-get install dataset-fashion-mnist");
  check_message(idx_error([&] { read_idx_images(dir.path().string()); }), dir.path().string(), "is a directory");

  const fs::path empty = dir.path() / "empty";
  fs::create_directory(empty);
  const std::string first = (empty / "train-images-idx3-ubyte.gz").string();
  check_message(idx_error([&] { load_fashion_mnist(empty.string()); }), first,
                "no such file (nor train-images-idx3-ubyte uncompressed); Fashion-MNIST comes with Debian's package: apt-get install "
                "dataset-fashion-mnist");
  write_small_dataset(empty, 4, 2);
  fs::remove(empty / "t10k-labels-idx1-ubyte");
  check_message(idx_error([&] { load_fashion_mnist(empty.string()); }), (empty / "t10k-labels-idx1-ubyte.gz").string(),
                "nor t10k-labels-idx1-ubyte uncompressed");
}

TEST_CASE("load_fashion_mnist reads the four files, gzip or raw, and checks that they agree") {
  ScratchDir dir;
  write_small_dataset(dir.path(), 6, 3);
  const FashionMnist data = load_fashion_mnist(dir.path().string());
  CHECK(data.train_images.count == 6);
  CHECK(data.train_images.rows == 3);
  CHECK(data.train_images.cols == 2);
  CHECK(data.train_images.pixels == pattern(36));
  CHECK(data.train_labels == pattern(6, 10));
  CHECK(data.test_images.count == 3);
  CHECK(data.test_images.pixels == pattern(18));
  CHECK(data.test_labels == pattern(3, 10));
  // The .gz file wins when both are there.
  write(dir.path() / "t10k-labels-idx1-ubyte.gz", gzip(idx_file(0x801, {3}, {7, 7, 7})));
  CHECK(load_fashion_mnist(dir.path().string()).test_labels == Bytes{7, 7, 7});

  // Counts that disagree between images and labels.
  write(dir.path() / "train-labels-idx1-ubyte.gz", gzip(labels_file(5)));
  const std::string train_labels = (dir.path() / "train-labels-idx1-ubyte.gz").string();
  check_message(idx_error([&] { load_fashion_mnist(dir.path().string()); }), train_labels,
                "5 labels but " + (dir.path() / "train-images-idx3-ubyte.gz").string() + " holds 6 images");
  write(dir.path() / "train-labels-idx1-ubyte.gz", gzip(labels_file(6)));
  CHECK_NOTHROW(load_fashion_mnist(dir.path().string()));

  // Test images of another size than the training images.
  fs::remove(dir.path() / "t10k-labels-idx1-ubyte.gz");
  write(dir.path() / "t10k-images-idx3-ubyte", images_file(3, 2, 3));
  check_message(idx_error([&] { load_fashion_mnist(dir.path().string()); }), (dir.path() / "t10k-images-idx3-ubyte").string(),
                "images of 2 x 3, but the training images are 3 x 2");

  // A malformed file inside the set is reported as read_idx_* report it.
  write(dir.path() / "t10k-images-idx3-ubyte", images_file(3, 3, 2));
  write(dir.path() / "t10k-labels-idx1-ubyte", idx_file(0x801, {3}, {1, 2, 42}));
  check_message(idx_error([&] { load_fashion_mnist(dir.path().string()); }), (dir.path() / "t10k-labels-idx1-ubyte").string(),
                "label 42 at index 2");
}

TEST_CASE("The installed Fashion-MNIST is the published data set") {
  if (!fs::exists(fs::path(kFashionMnistDir) / "train-images-idx3-ubyte.gz")) {
    attnlab::testing::skip_test(std::string(kFashionMnistDir) +
                                " has no Fashion-MNIST (Debian package dataset-fashion-mnist): the real-data check is skipped");
    return;
  }
  const FashionMnist data = load_fashion_mnist();
  CHECK(data.train_images.count == 60000);
  CHECK(data.test_images.count == 10000);
  for (const IdxImages* im : {&data.train_images, &data.test_images}) {
    CHECK(im->rows == 28);
    CHECK(im->cols == 28);
    CHECK(im->pixels.size() == static_cast<std::size_t>(im->count) * 784);
  }
  // Checksums computed independently with Python's gzip module (FNV-1a 64 of the first image's
  // 784 bytes) and the published label balance: 6,000 and 1,000 of every class.
  CHECK(fnv1a64(data.train_images.pixels.data(), 784) == 0x01fdf72590541338ull);
  CHECK(fnv1a64(data.test_images.pixels.data(), 784) == 0xcb45b7589f1b853bull);
  CHECK(data.train_labels.front() == 9);  // an ankle boot
  CHECK(data.test_labels.front() == 9);
  for (int c = 0; c < kIdxClasses; ++c) {
    CAPTURE(c);
    CHECK(std::count(data.train_labels.begin(), data.train_labels.end(), c) == 6000);
    CHECK(std::count(data.test_labels.begin(), data.test_labels.end(), c) == 1000);
  }
}

TEST_CASE("bug: a gzip stream going on past what its header declares was inflated to its end; now reading stops one piece past") {
  // A header declaring 3 labels, then 64 members of 1 MiB of zeros each: 64 MiB of trailing data, which
  // the reader used to inflate whole to count them (a 64 KB file here; gigabytes in a hostile one).
  ScratchDir dir;
  Bytes file = gzip(labels_file(3));
  const Bytes member = gzip(Bytes(std::size_t{1} << 20, 0));
  for (int i = 0; i < 64; ++i) file.insert(file.end(), member.begin(), member.end());
  check_labels_refused(dir.path() / "labels.gz", file, "more than 1048576 bytes of trailing data: the header says 3 bytes; reading stopped there");
  // A few trailing bytes are still counted exactly.
  Bytes few = labels_file(3);
  few.insert(few.end(), {0, 0});
  check_labels_refused(dir.path() / "labels.gz", gzip(few), "2 bytes of trailing data: the header says 3 bytes, the file has 5");
}

TEST_CASE("IDX files are opened without blocking: a FIFO or device is refused at once") {
  ScratchDir dir;
  REQUIRE(::mkfifo((dir.path() / "fifo").c_str(), 0644) == 0);
  const std::string fifo = (dir.path() / "fifo").string();
  check_message(idx_error([&] { read_idx_images(fifo); }), fifo, "is a FIFO, not a regular file");
  check_message(idx_error([&] { read_idx_labels("/dev/zero"); }), "/dev/zero", "is a character device, not a regular file");
}

TEST_CASE("bug: a gzip IDX file declaring 10^7 images (7.8 GB inflated, within the ratio bound) ended in bad_alloc under a "
          "memory cap; now refused before inflating" * doctest::skip(attnlab::testing::kAddressSanitizer)) {
  // 10^7 images of 28 x 28 behind a header, as ~30000 gzip members of 256 KiB of zeros each (8 MB of file,
  // each member ~950:1): exp_vit_training --data on it under a 4 GiB address-space cap. Inflating it would
  // need 7.8 GB; the header's size is checked against the memory left first.
  ScratchDir dir;
  write_small_dataset(dir.path(), 4, 4, 28, 28);
  const std::uint64_t count = 10'000'000, data = count * 28 * 28;
  Bytes file = gzip(idx_file(0x803, {static_cast<std::uint32_t>(count), 28, 28}, {}));
  const std::size_t piece = std::size_t{1} << 18;
  const Bytes member = gzip(Bytes(piece, 0));
  for (std::uint64_t done = 0; done < data; done += piece) file.insert(file.end(), member.begin(), member.end());
  REQUIRE(static_cast<double>(data) / static_cast<double>(file.size()) < 1032);  // within the ratio bound
  write(dir.path() / "train-images-idx3-ubyte.gz", file);
  const attnlab::ProcessResult r = attnlab::run_process(
      "/usr/bin/prlimit", {"--as=4294967296", std::string(ATTNLAB_BIN_DIR) + "/exp_vit_training", "--quick", "--threads", "1",
                           "--data", dir.path().string(), "--out", (dir.path() / "out").string()},
      true);
  INFO(r.output);
  CHECK(r.exit_status == 2);
  CHECK(contains(r.output, "the header says 10000000 x 28 x 28 = 7840000000 bytes, more than the"));
  CHECK(contains(r.output, "this process may still use"));
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  CHECK(!fs::exists(dir.path() / "out"));
}

TEST_CASE("A data set of 0 images is refused naming the file (clopper_pearson failed without naming it)") {
  ScratchDir dir;
  write_small_dataset(dir.path(), 4, 0);
  const std::string message = idx_error([&] { load_fashion_mnist(dir.path().string()); });
  check_message(message, (dir.path() / "t10k-images-idx3-ubyte").string(), "0 images: the test set needs at least one");
}
