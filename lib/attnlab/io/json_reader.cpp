// A small strict JSON reader (json_reader.hpp).
#include "attnlab/io/json_reader.hpp"

#include "attnlab/io/printable.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace attnlab {

namespace {

class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : s_(text) {}
  Json parse() {
    Json j = value(0);
    skip();
    if (i_ != s_.size()) fail("trailing characters");
    return j;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(fmt::format("malformed JSON at byte {}: {}", i_, what));
  }
  void skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool eat(char c) {
    skip();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(fmt::format("expected '{}'", c));
  }
  bool digit() const { return i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_])) != 0; }
  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      if (i_ >= s_.size()) fail("unterminated string");
      const char c = s_[i_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("a control character inside a string");
      if (c == '\\') {
        if (i_ >= s_.size()) fail("unterminated escape");
        const char e = s_[i_++];
        if (e == '"' || e == '\\' || e == '/') out += e;
        else if (e == 'n') out += '\n';
        else if (e == 't') out += '\t';
        else fail("unsupported escape");
      } else {
        out += c;
      }
    }
  }
  // JSON's number grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, then strtod on exactly that text.
  Json number() {
    const std::size_t start = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    if (!digit()) fail("expected a value");
    if (s_[i_] == '0') ++i_;
    else
      while (digit()) ++i_;
    bool integral = true;
    if (i_ < s_.size() && s_[i_] == '.') {
      integral = false;
      ++i_;
      if (!digit()) fail("expected a digit after the decimal point");
      while (digit()) ++i_;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      integral = false;
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (!digit()) fail("expected a digit in the exponent");
      while (digit()) ++i_;
    }
    const std::string text = s_.substr(start, i_ - start);
    const double d = std::strtod(text.c_str(), nullptr);
    if (!std::isfinite(d)) fail("number " + text + " is beyond double's range");
    Json j{d};
    j.integer = integral;
    return j;
  }
  Json value(int depth) {
    skip();
    if (i_ >= s_.size()) fail("unexpected end");
    const char c = s_[i_];
    if ((c == '{' || c == '[') && depth >= kJsonMaxDepth) fail(fmt::format("nested deeper than {} levels", kJsonMaxDepth));
    if (c == '{') {
      ++i_;
      auto obj = std::make_shared<JsonObject>();
      if (!eat('}')) {
        do {
          skip();
          const std::size_t key_at = i_;
          std::string key = string();
          expect(':');
          // A repeated key is refused: which value counts would otherwise be up to the reader.
          if (!obj->emplace(key, value(depth + 1)).second) {
            i_ = key_at;
            fail("duplicate key \"" + escaped(key) + "\"");  // one line even for a key holding a newline
          }
        } while (eat(','));
        expect('}');
      }
      return Json{obj};
    }
    if (c == '[') {
      ++i_;
      auto arr = std::make_shared<JsonArray>();
      if (!eat(']')) {
        do arr->push_back(value(depth + 1));
        while (eat(','));
        expect(']');
      }
      return Json{arr};
    }
    if (c == '"') return Json{string()};
    for (const auto& [word, val] : {std::pair<std::string, Json>{"true", Json{true}}, {"false", Json{false}}, {"null", Json{nullptr}}})
      if (s_.compare(i_, word.size(), word) == 0) {
        i_ += word.size();
        return val;
      }
    return number();
  }
  const std::string& s_;
  std::size_t i_ = 0;
};

}  // namespace

Json parse_json(const std::string& text) { return JsonParser(text).parse(); }

const JsonObject& json_object(const Json& j, const std::string& what) {
  if (auto p = std::get_if<std::shared_ptr<JsonObject>>(&j.v)) return **p;
  throw std::runtime_error(what + " is not an object");
}

const Json& json_field(const JsonObject& o, const std::string& key) {
  const auto it = o.find(key);
  if (it == o.end()) throw std::runtime_error("no \"" + key + "\"");
  return it->second;
}

std::string json_string_field(const JsonObject& o, const std::string& key) {
  if (auto p = std::get_if<std::string>(&json_field(o, key).v)) return *p;
  throw std::runtime_error("\"" + key + "\" is not a string");
}

std::int64_t json_int_field(const JsonObject& o, const std::string& key) {
  const Json& field = json_field(o, key);
  if (auto p = std::get_if<double>(&field.v); p != nullptr && field.integer) {
    // Range first: converting a double outside int64's range is undefined behaviour.
    const double d = *p;
    if (std::abs(d) <= 9007199254740992.0 && d == std::floor(d)) return static_cast<std::int64_t>(d);
  }
  throw std::runtime_error("\"" + key + "\" is not an integer");
}

}  // namespace attnlab
