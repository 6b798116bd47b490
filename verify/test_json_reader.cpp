// The strict JSON reader (io/json_reader.hpp) and a checkpoint manifest's parser
// (model/checkpoint_manifest.hpp): what they accept, and one clear error for everything else.
#include <doctest/doctest.h>

#include <string>

#include "attnlab/io/json_reader.hpp"
#include "attnlab/model/checkpoint_manifest.hpp"

using namespace attnlab;

TEST_CASE("json reader: values, nesting, and the grammar's edges") {
  const Json j = parse_json(R"( {"a": [1, -2.5e3, 0, true, false, null, "x\"\\\/\n\t"], "b": {}} )");
  const JsonObject& o = json_object(j, "root");
  const auto& a = *std::get<std::shared_ptr<JsonArray>>(json_field(o, "a").v);
  REQUIRE(a.size() == 7);
  CHECK(std::get<double>(a[0].v) == 1.0);
  CHECK(std::get<double>(a[1].v) == -2500.0);
  CHECK(std::get<bool>(a[3].v));
  CHECK(std::get<std::string>(a[6].v) == "x\"\\/\n\t");
  CHECK(json_object(json_field(o, "b"), "b").empty());
  // Nesting up to the limit is read; one level more is refused before the stack is at risk.
  const std::string ok = std::string(kJsonMaxDepth, '[') + std::string(kJsonMaxDepth, ']');
  CHECK_NOTHROW(parse_json(ok));
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK_THROWS_WITH_AS(parse_json(deep), doctest::Contains("nested deeper than 64 levels"), std::runtime_error);
}

TEST_CASE("json reader: malformed text is one error naming the byte") {
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "01", "1.", "-", "1e", ".5", "+1", "nan", "inf", "NaN", "0x10",
                          "1e999", "-1e999", "\"a\nb\"", "\"\\u0041\"", "[1] x", "tru", "{\"a\": 1,}"}) {
    INFO("text: " << bad);
    CHECK_THROWS_WITH_AS(parse_json(bad), doctest::Contains("malformed JSON at byte"), std::runtime_error);
  }
}

TEST_CASE("json reader: a key repeated within one object is refused, naming the key and its byte") {
  CHECK_THROWS_WITH_AS(parse_json(R"({"a": 1, "b": 2, "a": 3})"), doctest::Contains("at byte 17: duplicate key \"a\""),
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(parse_json(R"({"x": {"k": 1, "k": 1}})"), doctest::Contains("duplicate key \"k\""), std::runtime_error);
  // The same key in different objects is no repetition.
  CHECK_NOTHROW(parse_json(R"({"a": {"k": 1}, "b": {"k": 2}, "c": [{"k": 3}, {"k": 4}]})"));
}

TEST_CASE("json reader: integers only where exact; fields named in errors") {
  const Json j = parse_json(R"({"i": 42, "neg": -7, "big": 9007199254740992, "bigger": 9007199254740994,
                               "frac": 2.5, "huge": 1e300, "s": "x"})");
  const JsonObject& o = json_object(j, "root");
  CHECK(json_int_field(o, "i") == 42);
  CHECK(json_int_field(o, "neg") == -7);
  CHECK(json_int_field(o, "big") == 9007199254740992);
  // Beyond 2^53 a double no longer names one integer; 1e300 would overflow the conversion.
  for (const char* key : {"bigger", "frac", "huge", "s"})
    CHECK_THROWS_WITH_AS(json_int_field(o, key), doctest::Contains("is not an integer"), std::runtime_error);
  CHECK_THROWS_WITH_AS(json_int_field(o, "none"), doctest::Contains("no \"none\""), std::runtime_error);
  CHECK_THROWS_WITH_AS(json_string_field(o, "i"), doctest::Contains("\"i\" is not a string"), std::runtime_error);
}

namespace {

std::string manifest(const std::string& D = "8", const std::string& stride = "2", const std::string& shape = "[16, 8]") {
  return R"({"format": "attnlab-vit-checkpoint", "version": 2, "method": "exact", "D": )" + D +
         R"(, "H": 2, "L": 1, "mlp": 12, "n": 16, "patch": 4, "stride": )" + stride +
         R"(, "pad": 1, "image": 8, "classes": 10, "projection_k": 0, "features": 0, "landmarks": 0,
            "pinv_iterations": 0, "seed": 7, "step": 3,
            "parameters": [{"name": "embed.W", "file": "embed.W.npy", "shape": )" + shape +
         R"(, "dtype": "float32", "kind": "parameter"}]})";
}

// manifest() with its parameters list replaced by `parameters`.
std::string with_parameters(const std::string& parameters) {
  std::string text = manifest();
  return text.substr(0, text.find("\"parameters\"")) + "\"parameters\": " + parameters + "}";
}

}  // namespace

TEST_CASE("checkpoint manifest: a good one parses; hostile widths are refused, not converted") {
  const CheckpointManifest m = parse_checkpoint_manifest(manifest(), "checkpoint c");
  CHECK(m.info.config.D == 8);
  CHECK(m.info.config.tokens() == 16);
  CHECK(m.info.step == 3);
  REQUIRE(m.tensors.count("embed.W") == 1);
  CHECK(m.tensors.at("embed.W").shape == std::vector<std::size_t>{16, 8});
  CHECK(m.tensors.at("embed.W").file == "embed.W.npy");
  CHECK(m.tensors.at("embed.W").kind == "parameter");
  // One line: the checkpoint, the file, then the problem.
  const auto refused = [](const std::string& text, const char* fragment) {
    INFO(text);
    CHECK_THROWS_WITH_AS(parse_checkpoint_manifest(text, "checkpoint c"), doctest::Contains(fragment), CheckpointError);
    try {
      parse_checkpoint_manifest(text, "checkpoint c");
    } catch (const CheckpointError& e) {
      CHECK(std::string(e.what()).rfind("checkpoint c: manifest.json: ", 0) == 0);
    }
  };
  refused(manifest("1e300"), "\"D\" is not an integer");
  refused(manifest("-3"), "\"D\" = -3 is outside [0, 1048576]");
  refused(manifest("4294967296"), "\"D\" = 4294967296 is outside");
  refused(manifest("8", "0"), "do not tile the image");
  refused(manifest("8", "4"), "do not tile the image");
  refused(manifest("8", "2", "[1e300]"), "a shape entry is not a size");
  refused(manifest("8", "2", "[-1]"), "a shape entry is not a size");
  refused(manifest("8", "2", "7"), "\"shape\" is not an array");
  refused("[]", "manifest is not an object");
  refused("{", "malformed JSON");
}

TEST_CASE("bug: a manifest giving a width twice (\"D\": 8, then \"D\": 64) was read last-wins; now refused in one line") {
  std::string text = manifest();
  text.insert(text.find("\"H\""), "\"D\": 64, ");
  CHECK_THROWS_WITH_AS(parse_checkpoint_manifest(text, "checkpoint c"), doctest::Contains("duplicate key \"D\""), CheckpointError);
  // A repeated key holding a newline is named escaped, on one line.
  CHECK_THROWS_WITH_AS(parse_json("{\"a\\nb\": 1, \"a\\nb\": 2}"), doctest::Contains("duplicate key \"a\\x0ab\""), std::runtime_error);
}

TEST_CASE("bug: a manifest listing a tensor twice silently took the second entry; now refused, with dtype and kind checked") {
  const std::string wq = R"({"name": "block0.attn.Wq", "file": "block0.attn.Wq.npy", "shape": [8, 8], "dtype": "float32", "kind": "parameter"})";
  const std::string wk_as_wq = R"({"name": "block0.attn.Wq", "file": "block0.attn.Wk.npy", "shape": [8, 8], "dtype": "float32", "kind": "parameter"})";
  CHECK_NOTHROW(parse_checkpoint_manifest(with_parameters("[" + wq + "]"), "checkpoint c"));
  CHECK_THROWS_WITH_AS(parse_checkpoint_manifest(with_parameters("[" + wq + ", " + wk_as_wq + "]"), "checkpoint c"),
                       doctest::Contains("\"block0.attn.Wq\" is listed twice"), CheckpointError);
  // The dtype must be what the files hold (float32), the kind one the loader knows; neither may be missing.
  const auto entry = [](const std::string& dtype, const std::string& kind) {
    return with_parameters(R"([{"name": "w", "file": "w.npy", "shape": [2])" + dtype + kind + "}]");
  };
  CHECK_NOTHROW(parse_checkpoint_manifest(entry(R"(, "dtype": "float32")", R"(, "kind": "buffer")"), "checkpoint c"));
  CHECK_THROWS_WITH_AS(parse_checkpoint_manifest(entry(R"(, "dtype": "float64")", R"(, "kind": "parameter")"), "checkpoint c"),
                       doctest::Contains("\"w\" has dtype \"float64\"; a checkpoint's tensors are float32"), CheckpointError);
  CHECK_THROWS_WITH_AS(parse_checkpoint_manifest(entry(R"(, "dtype": "float32")", R"(, "kind": "weights")"), "checkpoint c"),
                       doctest::Contains("kind \"weights\", neither parameter nor buffer"), CheckpointError);
  CHECK_THROWS_WITH_AS(parse_checkpoint_manifest(entry("", R"(, "kind": "parameter")"), "checkpoint c"),
                       doctest::Contains("no \"dtype\""), CheckpointError);
  CHECK_THROWS_WITH_AS(parse_checkpoint_manifest(entry(R"(, "dtype": "float32")", ""), "checkpoint c"),
                       doctest::Contains("no \"kind\""), CheckpointError);
}
