// What a file is, in words, for the one-line refusals of the readers and writers (from a stat mode).
#pragma once

#include <sys/stat.h>

namespace attnlab {

// "a directory", "a FIFO", "a character device", ...; "not a regular file" for any other kind.
inline const char* file_kind(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace attnlab
