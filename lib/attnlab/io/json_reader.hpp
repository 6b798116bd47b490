// A small strict JSON reader for the files attnlab writes by hand (checkpoint manifests): objects,
// arrays, strings (the escapes \" \\ \/ \n \t), numbers (JSON's grammar, finite), true, false, null.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace attnlab {

struct Json;
using JsonObject = std::map<std::string, Json>;
using JsonArray = std::vector<Json>;
struct Json {
  std::variant<std::nullptr_t, bool, double, std::string, std::shared_ptr<JsonArray>, std::shared_ptr<JsonObject>> v;
  // A number written as an integer: no fraction and no exponent ("8", not "8.0" or "8e0"). A count, a shape or
  // an offset must be written so; the value alone cannot tell 8.0 from 8.
  bool integer = false;
};

// Nesting deeper than this is refused (a hostile file must not exhaust the stack).
inline constexpr int kJsonMaxDepth = 64;

// Parses the whole text; throws std::runtime_error("malformed JSON at byte N: ...") for anything else,
// including a key repeated within one object, trailing characters, numbers outside JSON's grammar or beyond double's range, and nesting
// deeper than kJsonMaxDepth.
Json parse_json(const std::string& text);

// Field access with one-line errors (std::runtime_error naming the key).
const JsonObject& json_object(const Json& j, const std::string& what);
const Json& json_field(const JsonObject& o, const std::string& key);
std::string json_string_field(const JsonObject& o, const std::string& key);
// A number written as an integer (Json::integer) within +-2^53 (exactly representable), else an error naming the key.
std::int64_t json_int_field(const JsonObject& o, const std::string& key);

}  // namespace attnlab
