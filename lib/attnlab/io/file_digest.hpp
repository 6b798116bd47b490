// A file's size and CRC-32 (zlib's): enough to tell a table from a half-written or replaced one
// (shard stamps, issue 16). Not a cryptographic hash: it guards against accidents, not adversaries.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>

namespace attnlab {

struct FileDigest {
  std::uint64_t bytes = 0;
  std::uint32_t crc32 = 0;
  bool operator==(const FileDigest&) const = default;
};

FileDigest digest_text(std::string_view text);
// Throws std::runtime_error (BoundedFileError) naming the file if it cannot be read or is not a regular file.
FileDigest digest_file(const std::filesystem::path& path);

}  // namespace attnlab
