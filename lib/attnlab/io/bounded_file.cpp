// Opening a file that may be hostile (bounded_file.hpp).
#include "attnlab/io/bounded_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

#include "attnlab/io/file_kind.hpp"

namespace attnlab {

BoundedFileError::BoundedFileError(const std::filesystem::path& path, const std::string& problem)
    : std::runtime_error(path.string() + ": " + problem), problem_(problem) {}

BoundedFile::BoundedFile(const std::filesystem::path& path, std::uint64_t max_bytes, const std::string& limit)
    : path_(path) {
  // O_NONBLOCK: open(2) on a FIFO without a writer (or on some devices) would wait; with it, the open
  // returns at once and fstat below refuses what was opened. O_NOCTTY: a terminal never becomes ours.
  do fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0) {
    const int err = errno;
    if (err == ENOENT) throw BoundedFileError(path, "no such file");
    if (err == ENXIO) throw BoundedFileError(path, "not a regular file (a device or socket without a reader)");
    throw BoundedFileError(path, fmt::format("cannot open for reading: {}", std::strerror(err)));
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    throw BoundedFileError(path, fmt::format("cannot read its size: {}", std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw BoundedFileError(path, fmt::format("is {}, not a regular file", file_kind(st.st_mode)));
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
  if (size_ > max_bytes) {
    ::close(fd_);
    throw BoundedFileError(path, fmt::format("{} bytes, more than {} ({} bytes)", size_, limit, max_bytes));
  }
  // A regular file ignores O_NONBLOCK; cleared all the same, so reads are plain blocking reads.
  if (const int flags = ::fcntl(fd_, F_GETFL); flags >= 0) ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
}

BoundedFile::~BoundedFile() {
  if (fd_ >= 0) ::close(fd_);
}

BoundedFile::BoundedFile(BoundedFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_), size_(other.size_), position_(other.position_) {
  other.fd_ = -1;
}

std::size_t BoundedFile::read(void* dst, std::size_t n) {
  const std::uint64_t left = size_ - position_;
  if (n > left) n = static_cast<std::size_t>(left);
  read_at(position_, dst, n);
  position_ += n;
  return n;
}

void BoundedFile::read_at(std::uint64_t offset, void* dst, std::size_t n) const {
  if (offset > size_ || n > size_ - offset)
    throw BoundedFileError(path_, fmt::format("a read of {} bytes at offset {} goes past the end of the file ({} bytes)", n,
                                              offset, size_));
  auto* out = static_cast<char*>(dst);
  std::size_t done = 0;
  while (done < n) {
    // pread takes an off_t and returns at most SSIZE_MAX: pieces of at most 1 GiB keep both in range.
    const std::size_t piece = std::min<std::size_t>(n - done, std::size_t{1} << 30);
    const ssize_t got = ::pread(fd_, out + done, piece, static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw BoundedFileError(path_, fmt::format("read error: {}", std::strerror(errno)));
    }
    if (got == 0) throw BoundedFileError(path_, "read error: the file is shorter than its size said (it shrank while being read)");
    done += static_cast<std::size_t>(got);
  }
}

void BoundedFile::expect_end() const {
  char extra = 0;
  ssize_t got;
  do got = ::pread(fd_, &extra, 1, static_cast<off_t>(size_));
  while (got < 0 && errno == EINTR);
  if (got > 0) throw BoundedFileError(path_, "read error: the file grew while being read");
}

std::vector<std::uint8_t> BoundedFile::read_all() {
  if (size_ > static_cast<std::uint64_t>(std::numeric_limits<std::ptrdiff_t>::max()))
    throw BoundedFileError(path_, "too large for this machine's address space");
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size_));
  read_at(0, bytes.data(), bytes.size());
  position_ = size_;
  expect_end();
  return bytes;
}

std::string BoundedFile::read_all_text() {
  if (size_ > static_cast<std::uint64_t>(std::numeric_limits<std::ptrdiff_t>::max()))
    throw BoundedFileError(path_, "too large for this machine's address space");
  std::string text(static_cast<std::size_t>(size_), '\0');
  read_at(0, text.data(), text.size());
  position_ = size_;
  expect_end();
  return text;
}

std::vector<std::uint8_t> read_bounded_bytes(const std::filesystem::path& path, std::uint64_t max_bytes,
                                             const std::string& limit) {
  return BoundedFile(path, max_bytes, limit).read_all();
}

std::string read_bounded_text(const std::filesystem::path& path, std::uint64_t max_bytes, const std::string& limit) {
  return BoundedFile(path, max_bytes, limit).read_all_text();
}

}  // namespace attnlab
