#include "attnlab/io/file_digest.hpp"

#include <algorithm>
#include <climits>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <zlib.h>

namespace attnlab {

FileDigest digest_text(std::string_view text) {
  FileDigest d;
  d.bytes = text.size();
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes lengths as uInt: feed the text in pieces that fit.
  const std::size_t piece = static_cast<std::size_t>(UINT_MAX);
  for (std::size_t at = 0; at < text.size(); at += piece) {
    const std::size_t len = std::min(piece, text.size() - at);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(text.data() + at), static_cast<uInt>(len));
  }
  d.crc32 = static_cast<std::uint32_t>(crc);
  return d;
}

FileDigest digest_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot be read");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error(path.string() + ": read error");
  return digest_text(text);
}

}  // namespace attnlab
