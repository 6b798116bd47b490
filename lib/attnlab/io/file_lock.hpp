// One writer at a time: an exclusive lock on a lock file, held for a scope.
//
//   { FileLock lock(dir / ".claims.csv.lock");  // waits while another process holds it
//     read, change, write a temporary, rename }  // released here, or when the process ends
#pragma once

#include <filesystem>

namespace attnlab {

// flock(2) on `lock_file` (created if absent, 0644, never a symbolic link): an exclusive lock, waited
// for, released by the destructor or by the kernel when the process ends however it ends (SIGKILL
// included), so a killed writer never leaves a directory locked. The lock file itself stays (removing
// it would let two processes lock two different files of one name). Throws OutputError naming the file
// when it cannot be created or locked.
class FileLock {
 public:
  explicit FileLock(const std::filesystem::path& lock_file);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace attnlab
