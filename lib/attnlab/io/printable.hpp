// Text from a hostile file made safe for a one-line message.
#pragma once

#include <string>
#include <string_view>

#include <fmt/format.h>

namespace attnlab {

// `s` made safe for a one-line message: bytes outside printable ASCII become \xNN (and so does
// the backslash, so the escape is unambiguous). File names keep their UTF-8 bytes.
inline std::string escaped(std::string_view s, bool keep_non_ascii = false) {
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c >= 0x20 && c < 0x7f && c != '\\') || (keep_non_ascii && c >= 0x80)) out.push_back(ch);
    else out += fmt::format("\\x{:02x}", c);
  }
  return out;
}

}  // namespace attnlab
