// Write a whole file or nothing: temporary file, fsync, rename.
#pragma once

#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace attnlab {

// Thrown when an output cannot be written; the message names the path.
struct OutputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Checks that `path` may be written by write_file_atomically: not empty, and either absent or a
// regular file. A symbolic link, device node, FIFO, socket or directory at `path` is refused (renaming
// a temporary over it would silently replace it: as root, `--out /dev/null` would destroy /dev/null).
// Throws OutputError naming the path and what it is.
void check_output_file(const std::filesystem::path& path);

// Checks, before anything is computed, that write_file_atomically(path, ...) can succeed: check_output_file,
// and `path`'s directory exists and a file can be created in it. Throws OutputError naming the problem.
void check_output_target(const std::filesystem::path& path);

// Writes `contents` to `path` atomically: a temporary file in the same directory
// (so rename stays on one file system), fsync, then rename over `path`. Readers see
// the old file or the new one, never a half-written one; on any error the temporary
// file is removed and OutputError is thrown. `path` is checked with check_output_file first.
// The temporary is named .NAME.tmp.PID.XXXXXX; it is removed on SIGINT, SIGTERM and SIGHUP too (the
// signal then takes its default action), and ensure_writable_directory removes any left by a process
// that no longer exists (killed with SIGKILL, say).
void write_file_atomically(const std::filesystem::path& path, std::string_view contents);

// The same for contents produced piece by piece (a file too large to hold in memory at once): `produce`
// calls `write` with each piece in order. An exception from `produce` removes the temporary and
// propagates; `path` is then unchanged.
using AtomicPieceWriter = std::function<void(std::string_view piece)>;
void write_file_atomically(const std::filesystem::path& path, const std::function<void(const AtomicPieceWriter& write)>& produce);

// Creates `dir` if needed and checks a file can be created in it; throws
// OutputError naming the directory otherwise. Leaves nothing behind; removes stale temporaries
// of write_file_atomically whose process has ended.
void ensure_writable_directory(const std::filesystem::path& dir);

// "" when ensure_writable_directory(dir) would succeed, else the problem, without creating anything: `dir`
// exists as a directory a file can be created in, or its nearest existing ancestor is one.
std::string output_directory_problem(const std::filesystem::path& dir);

// Removes temporaries of write_file_atomically in `dir` (.NAME.tmp.PID.XXXXXX) whose process no
// longer exists and that this user owns; never anything else. Errors are ignored (best effort).
void remove_stale_temporaries(const std::filesystem::path& dir);

}  // namespace attnlab
