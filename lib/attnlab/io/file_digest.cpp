#include "attnlab/io/file_digest.hpp"

#include <algorithm>
#include <climits>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>
#include <zlib.h>

#include "attnlab/io/bounded_file.hpp"

namespace attnlab {

namespace {

uLong crc_of(uLong crc, const char* data, std::size_t size) {
  // zlib takes lengths as uInt: feed the text in pieces that fit.
  const std::size_t piece = static_cast<std::size_t>(UINT_MAX);
  for (std::size_t at = 0; at < size; at += piece) {
    const std::size_t len = std::min(piece, size - at);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data + at), static_cast<uInt>(len));
  }
  return crc;
}

}  // namespace

FileDigest digest_text(std::string_view text) {
  return {text.size(), static_cast<std::uint32_t>(crc_of(crc32(0L, Z_NULL, 0), text.data(), text.size()))};
}

FileDigest digest_file(const std::filesystem::path& path) {
  // Streamed in pieces through a bounded open: a FIFO or device in a shard directory is refused at once,
  // and a large artifact (a checkpoint) is never held whole in memory.
  BoundedFile file(path, std::numeric_limits<std::uint64_t>::max(), "any size");
  std::vector<char> buffer(std::size_t{1} << 20);
  uLong crc = crc32(0L, Z_NULL, 0);
  for (std::size_t got; (got = file.read(buffer.data(), buffer.size())) > 0;) crc = crc_of(crc, buffer.data(), got);
  file.expect_end();
  return {file.size(), static_cast<std::uint32_t>(crc)};
}

}  // namespace attnlab
