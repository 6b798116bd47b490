// An exclusive lock on a lock file (file_lock.hpp).
#include "attnlab/io/file_lock.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include "attnlab/io/atomic_file.hpp"

namespace attnlab {

FileLock::FileLock(const std::filesystem::path& lock_file) {
  // O_NOFOLLOW: a symbolic link planted at the lock's name is refused, never followed.
  do fd_ = ::open(lock_file.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  while (fd_ < 0 && errno == EINTR);
  if (fd_ < 0) throw OutputError(fmt::format("{}: cannot open the lock file: {}", lock_file.string(), std::strerror(errno)));
  int rc;
  do rc = ::flock(fd_, LOCK_EX);
  while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    ::close(fd_);
    throw OutputError(fmt::format("{}: cannot lock: {}", lock_file.string(), std::strerror(err)));
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the only descriptor releases the lock
}

}  // namespace attnlab
