// Text from a hostile file, made safe for a one-line message.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace attnlab {

// `s` with every byte outside printable ASCII, and the backslash, as \xNN: a name or value quoted from a
// file cannot break a message's line or hide what it says.
inline std::string printable_text(std::string_view s) {
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(ch);
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

}  // namespace attnlab
