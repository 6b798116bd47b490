// Write a whole file or nothing: temporary file, fsync, rename.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace attnlab {

// Thrown when an output cannot be written; the message names the path.
struct OutputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Writes `contents` to `path` atomically: a temporary file in the same directory
// (so rename stays on one file system), fsync, then rename over `path`. Readers see
// the old file or the new one, never a half-written one; on any error the temporary
// file is removed and OutputError is thrown.
void write_file_atomically(const std::filesystem::path& path, std::string_view contents);

// Creates `dir` if needed and checks a file can be created in it; throws
// OutputError naming the directory otherwise. Leaves nothing behind.
void ensure_writable_directory(const std::filesystem::path& dir);

}  // namespace attnlab
