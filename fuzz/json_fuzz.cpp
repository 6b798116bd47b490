// libFuzzer entry for the strict JSON reader (io/json_reader.hpp) that manifests, stamps and safetensors
// headers go through: any text is parsed, or refused with one clean std::runtime_error line.
//
// Built and run by `make fuzz` (clang++ -fsanitize=fuzzer,address,undefined). Besides the sanitizers'
// checks (deep nesting must not exhaust the stack, no double-to-integer conversion out of range), an
// input fails when parsing throws anything else, when the message is not one printable line
// "malformed JSON at byte N: ..." with N inside the text, when an accepted value does not survive being
// written and read back unchanged, or when json_int_field returns an integer other than the number.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "attnlab/io/json_reader.hpp"

namespace {

using attnlab::Json;

bool clean_line(const std::string& s, std::size_t size) {
  const std::string prefix = "malformed JSON at byte ";
  if (s.rfind(prefix, 0) != 0) return false;
  std::size_t at = 0, i = prefix.size();
  if (i >= s.size() || s[i] < '0' || s[i] > '9') return false;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) at = at * 10 + static_cast<std::size_t>(s[i] - '0');
  if (at > size || s.compare(i, 2, ": ") != 0) return false;
  for (const char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  return true;
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else out += c;  // an accepted string holds no other control character
  }
  return out + "\"";
}

// The value as JSON text (%.17g holds every double exactly), checking json_int_field on every number.
std::string write(const Json& j) {
  if (std::holds_alternative<std::nullptr_t>(j.v)) return "null";
  if (const auto* b = std::get_if<bool>(&j.v)) return *b ? "true" : "false";
  if (const auto* d = std::get_if<double>(&j.v)) {
    if (!std::isfinite(*d)) std::abort();
    const attnlab::JsonObject probe{{"n", j}};
    try {
      if (static_cast<double>(attnlab::json_int_field(probe, "n")) != *d) std::abort();
    } catch (const std::runtime_error& e) {
      if (std::strcmp(e.what(), "\"n\" is not an integer") != 0) std::abort();
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", *d);
    return buf;
  }
  if (const auto* s = std::get_if<std::string>(&j.v)) return quote(*s);
  std::string out;
  if (const auto* a = std::get_if<std::shared_ptr<attnlab::JsonArray>>(&j.v)) {
    for (const Json& e : **a) out += (out.empty() ? "" : ",") + write(e);
    return "[" + out + "]";
  }
  for (const auto& [k, v] : *std::get<std::shared_ptr<attnlab::JsonObject>>(j.v))
    out += (out.empty() ? "" : ",") + quote(k) + ":" + write(v);
  return "{" + out + "}";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Json j;
  try {
    j = attnlab::parse_json(text);
  } catch (const std::runtime_error& e) {
    if (!clean_line(e.what(), size)) std::abort();
    return 0;
  }
  const std::string once = write(j);
  if (write(attnlab::parse_json(once)) != once) std::abort();
  return 0;
}
