// IDX files (the MNIST format): a strict reader for unsigned-byte images and labels, gzip or raw,
// and Fashion-MNIST's four files from Debian's dataset-fashion-mnist (issue 14).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace attnlab {

// Thrown for a file that is missing or not the IDX file we expect; what() is one line,
// "<file>: <problem>". Tools map it to exit status 2: the input is wrong, not the run.
class IdxError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Images as stored: `count` images of `rows` x `cols` pixels, row-major, image after image
// (pixels[(i * rows + r) * cols + c]).
struct IdxImages {
  std::int64_t count = 0, rows = 0, cols = 0;
  std::vector<std::uint8_t> pixels;
};

// Where Debian's dataset-fashion-mnist installs the four files.
inline constexpr char kFashionMnistDir[] = "/usr/share/datasets/fashion-mnist";
// The number of classes; every label is below it.
inline constexpr int kIdxClasses = 10;

// Reads an image file: magic 0x00000803 (unsigned bytes, 3 dimensions), then count, rows and cols
// as big-endian u32, then exactly count * rows * cols bytes. The file may be gzip-compressed
// (recognised by its gzip magic, whatever its name). Throws IdxError for a missing file, a wrong
// magic or dimension count, zero rows or columns, corrupt or truncated gzip data, data shorter or
// longer than the header says. Nothing is allocated beyond what the file actually holds, so a
// header that lies about its counts costs nothing. The file is opened without blocking and must be a
// regular file (a FIFO is refused at once); what the header declares must fit in the memory this
// process may still use (checked before inflating), and inflating stops one piece (1 MiB) past the
// declared size when the data go on.
IdxImages read_idx_images(const std::string& path);

// Reads a label file: magic 0x00000801 (unsigned bytes, 1 dimension), count as big-endian u32,
// then exactly count labels, each below kIdxClasses. Throws IdxError as read_idx_images does,
// and for a label of kIdxClasses or more.
std::vector<std::uint8_t> read_idx_labels(const std::string& path);

// The same checks on a file's bytes already in memory (`name` names it in errors): what the readers
// above call after reading the file, and what the fuzz target (fuzz/idx_fuzz.cpp) feeds.
IdxImages parse_idx_images(std::vector<std::uint8_t> bytes, const std::string& name);
std::vector<std::uint8_t> parse_idx_labels(std::vector<std::uint8_t> bytes, const std::string& name);

// Fashion-MNIST: 60,000 training and 10,000 test images (28 x 28) with their labels.
struct FashionMnist {
  IdxImages train_images, test_images;
  std::vector<std::uint8_t> train_labels, test_labels;
};

// Reads {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz from `dir` (each also accepted
// uncompressed, without .gz). Throws IdxError naming the file and the Debian package when a file
// is missing, for anything read_idx_* refuse, for a set of 0 images, for image and label counts that
// disagree, and for training and test images of different sizes. The image size itself is not fixed here: the
// model checks the size it needs.
FashionMnist load_fashion_mnist(const std::string& dir = kFashionMnistDir);

}  // namespace attnlab
