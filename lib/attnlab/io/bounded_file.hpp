// Opening a file that may be hostile: a regular file only, its size bounded before a byte is read, and an
// open that never blocks. Every reader of users' and shards' files starts here (manifests, .npy, IDX,
// stamps, tables, safetensors), so a FIFO is refused in milliseconds instead of hanging the reader, and
// /dev/zero is refused instead of being read until memory runs out.
//
//   BoundedFile f(path, 16 << 20, "a checkpoint manifest's limit");  // throws BoundedFileError
//   std::string text = f.read_all_text();
//
// A safetensors reader: BoundedFile f(path, available_memory(), "..."); f.read_at(0, &n, 8), then the
// header and each tensor's range with read_at (each range checked against size()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace attnlab {

// A file refused or unreadable: what() is one line "<path>: <problem>"; problem() is the part after the
// path, for readers whose own errors name the file their way (NpyError, IdxError, CheckpointError).
class BoundedFileError : public std::runtime_error {
 public:
  BoundedFileError(const std::filesystem::path& path, const std::string& problem);
  const std::string& problem() const { return problem_; }

 private:
  std::string problem_;
};

class BoundedFile {
 public:
  // Opens `path` for reading with O_NONBLOCK (opening a FIFO or a device never waits for a writer),
  // then checks the open descriptor with fstat (no window between a check and the open): anything but
  // a regular file (a directory, FIFO, socket or device, also behind a symbolic link) is refused, and so
  // is a file of more than `max_bytes` bytes, the message naming `limit` (e.g. "the 16 MiB a checkpoint
  // manifest may hold"). Throws BoundedFileError.
  BoundedFile(const std::filesystem::path& path, std::uint64_t max_bytes, const std::string& limit);
  ~BoundedFile();
  BoundedFile(BoundedFile&& other) noexcept;
  BoundedFile& operator=(BoundedFile&&) = delete;
  BoundedFile(const BoundedFile&) = delete;
  BoundedFile& operator=(const BoundedFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // The size fstat reported when the file was opened; reads never go beyond it.
  std::uint64_t size() const { return size_; }

  // Up to `n` bytes from the current position, never past size(); fewer only at size(). Throws when the
  // file turns out shorter than its size said.
  std::size_t read(void* dst, std::size_t n);
  // Exactly `n` bytes at `offset` (the position is unchanged); the range must lie within size().
  void read_at(std::uint64_t offset, void* dst, std::size_t n) const;
  // The whole file: size() bytes, then a check that the file did not grow meanwhile.
  std::vector<std::uint8_t> read_all();
  std::string read_all_text();
  // After size() bytes were read: throws when the file holds more (it grew while being read).
  void expect_end() const;

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  std::uint64_t size_ = 0, position_ = 0;
};

// The whole file at `path` as bytes or text, with BoundedFile's checks.
std::vector<std::uint8_t> read_bounded_bytes(const std::filesystem::path& path, std::uint64_t max_bytes,
                                             const std::string& limit);
std::string read_bounded_text(const std::filesystem::path& path, std::uint64_t max_bytes, const std::string& limit);

}  // namespace attnlab
