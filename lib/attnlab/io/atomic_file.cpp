// Write a whole file or nothing: temporary file, fsync, rename.
#include "attnlab/io/atomic_file.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attnlab {
namespace {

std::string errno_text() { return std::strerror(errno); }

// Closes and unlinks the temporary file unless released after a successful rename.
class TempFile {
 public:
  explicit TempFile(const std::filesystem::path& target) {
    std::string name = target.filename().string();
    name.insert(0, 1, '.');
    name.append(".tmp.XXXXXX");
    pattern_ = (target.parent_path().empty() ? std::filesystem::path(".") : target.parent_path()) / name;
    fd_ = ::mkstemp(pattern_.data());
    if (fd_ < 0)
      throw OutputError("cannot create a temporary file for " + target.string() + ": " + errno_text());
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!released_) ::unlink(pattern_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  int fd() const { return fd_; }
  const char* path() const { return pattern_.c_str(); }
  void close_checked(const std::filesystem::path& target) {
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) throw OutputError("cannot write " + target.string() + ": " + errno_text());
  }
  void release() { released_ = true; }

 private:
  std::string pattern_;
  int fd_ = -1;
  bool released_ = false;
};

}  // namespace

void write_file_atomically(const std::filesystem::path& path, std::string_view contents) {
  TempFile tmp(path);
  const char* data = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    const ssize_t n = ::write(tmp.fd(), data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw OutputError("cannot write " + path.string() + ": " + errno_text());
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  // mkstemp creates 0600; results are meant to be shared like any other file.
  if (::fchmod(tmp.fd(), 0644) != 0 || ::fsync(tmp.fd()) != 0)
    throw OutputError("cannot write " + path.string() + ": " + errno_text());
  tmp.close_checked(path);
  if (::rename(tmp.path(), path.c_str()) != 0)
    throw OutputError("cannot write " + path.string() + ": " + errno_text());
  tmp.release();
}

void ensure_writable_directory(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) throw OutputError("cannot create output directory " + dir.string() + ": " + ec.message());
  } else if (!std::filesystem::is_directory(dir, ec)) {
    throw OutputError("output path " + dir.string() + " is not a directory");
  }
  // Access checks lie for root; creating a file is the only honest test.
  TempFile probe(dir / "probe");
}

}  // namespace attnlab
