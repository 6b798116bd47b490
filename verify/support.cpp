// Helpers shared by the checks: scratch directories, running executables, ratio checks, the seed and
// repeat overrides, skips.
#include "support.hpp"

#include "attnlab/lab/subprocess.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <unistd.h>
#include <zlib.h>

namespace attnlab::testing {

ScratchDir::ScratchDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "attnlab-test-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<std::string> ScratchDir::files() const {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(path_))
    if (e.is_regular_file()) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

RunResult run_binary(const std::string& name, const std::vector<std::string>& args) {
  const ProcessResult r = run_process(std::string(ATTNLAB_BIN_DIR) + "/" + name, args, true);
  return {r.exit_status, r.output};
}

std::vector<std::uint8_t> gzip(const std::vector<std::uint8_t>& raw) {
  z_stream zs{};
  REQUIRE(deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY) == Z_OK);
  std::vector<std::uint8_t> out(deflateBound(&zs, static_cast<uLong>(raw.size())) + 64);
  zs.next_in = const_cast<Bytef*>(raw.data());
  zs.avail_in = static_cast<uInt>(raw.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool RatioJudgement::holds() const {
  if (std::isnan(ratio) || std::isnan(threshold)) return false;
  switch (bound) {
    case RatioBound::lt: return ratio < threshold;
    case RatioBound::le: return ratio <= threshold;
    case RatioBound::gt: return ratio > threshold;
    case RatioBound::ge: return ratio >= threshold;
  }
  return false;
}

std::ostream& operator<<(std::ostream& os, const RatioJudgement& j) {
  std::ostringstream s;
  s << std::setprecision(4) << j.what << ": ratio " << j.ratio;
  if (std::isnan(j.ratio)) {
    s << " is not a number (threshold " << j.threshold << ")";
  } else {
    // The relation that actually holds, so a failure reads "41.2 > threshold 30".
    const char* rel = j.ratio < j.threshold ? " < " : j.ratio > j.threshold ? " > " : j.ratio == j.threshold ? " == " : " ? ";
    s << rel << "threshold " << j.threshold;
  }
  return os << s.str();
}

namespace {

// A decimal integer in [lo, hi], digits only (no sign, no blanks); std::nullopt otherwise.
std::optional<std::uint64_t> parse_decimal(std::string_view text, std::uint64_t lo, std::uint64_t hi) {
  if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi) return std::nullopt;
  return v;
}

int g_skipped = 0;

}  // namespace

TestEnvironment parse_test_environment(const char* seed, const char* repeat) {
  TestEnvironment env;
  if (seed != nullptr) {
    const auto v = parse_decimal(seed, 0, std::numeric_limits<std::uint64_t>::max());
    if (!v)
      throw std::invalid_argument("ATTNLAB_TEST_SEED='" + std::string(seed) +
                                  "' is not a seed: expected a decimal integer in [0, 18446744073709551615]");
    env.seed = *v;
  }
  if (repeat != nullptr) {
    const auto v = parse_decimal(repeat, 1, 1000000);
    if (!v)
      throw std::invalid_argument("ATTNLAB_TEST_REPEAT='" + std::string(repeat) +
                                  "' is not a repeat count: expected a decimal integer in [1, 1000000]");
    env.repeat = static_cast<int>(*v);
  }
  return env;
}

const TestEnvironment& test_environment() {
  static const TestEnvironment env = [] {
    try {
      return parse_test_environment(std::getenv("ATTNLAB_TEST_SEED"), std::getenv("ATTNLAB_TEST_REPEAT"));
    } catch (const std::invalid_argument& e) {
      // stdio, not std::cerr: this may run during static initialisation (a namespace-scope seed).
      std::fprintf(stderr, "%s\n", e.what());
      std::exit(2);
    }
  }();
  return env;
}

namespace {

// (file name, seed) of every test_seed() call, in order, without repeats.
std::vector<std::pair<std::string, std::uint64_t>>& seed_registry() {
  static std::vector<std::pair<std::string, std::uint64_t>> seeds;
  return seeds;
}
std::mutex g_seed_mutex;

std::string file_name_of(std::string_view path) { return std::filesystem::path(path).filename().string(); }

}  // namespace

std::uint64_t test_seed(std::uint64_t default_seed, std::source_location where) {
  const std::uint64_t seed = test_environment().seed.value_or(default_seed);
  const std::lock_guard<std::mutex> lock(g_seed_mutex);
  auto& seeds = seed_registry();
  const std::pair<std::string, std::uint64_t> entry{file_name_of(where.file_name()), seed};
  if (std::find(seeds.begin(), seeds.end(), entry) == seeds.end()) seeds.push_back(entry);
  return seed;
}

int test_repeat(int default_repeat) { return test_environment().repeat.value_or(default_repeat); }

std::vector<Eigen::Index> test_sizes(Rng& rng, SizeRange random, int repeat, const std::vector<Eigen::Index>& edges) {
  std::vector<Eigen::Index> s = edges;
  const double span = static_cast<double>(random.hi - random.lo + 1);
  for (int i = 0, r = test_repeat(repeat); i < r; ++i) s.push_back(random.lo + static_cast<Eigen::Index>(rng.uniform() * span));
  return s;
}

std::string seeds_in_effect(std::string_view file) {
  const TestEnvironment& env = test_environment();
  std::ostringstream s;
  s << "seed: ";
  if (env.seed) {
    s << "ATTNLAB_TEST_SEED=" << *env.seed << " was the base seed of every seeded check";
  } else {
    // The failing file's own seeds, and those of the shared helpers (attention_test_support.hpp, ...).
    const std::string name = file_name_of(file);
    std::string own, shared;
    const std::lock_guard<std::mutex> lock(g_seed_mutex);
    for (const auto& [f, seed] : seed_registry()) {
      if (f == name) own += (own.empty() ? "" : ", ") + std::to_string(seed);
      else if (f.ends_with(".hpp")) shared += (shared.empty() ? "" : ", ") + f + " " + std::to_string(seed);
    }
    s << "each check's default (" << name << ": " << (own.empty() ? "none of its own" : own);
    if (!shared.empty()) s << "; shared helpers: " << shared;
    s << "); ATTNLAB_TEST_SEED=<seed> reruns with one of them, or another";
  }
  if (env.repeat) s << "; ATTNLAB_TEST_REPEAT=" << *env.repeat;
  return s.str();
}

void skip_test(std::string_view reason) {
  ++g_skipped;
  std::cout << "SKIPPED: " << reason << std::endl;
}

int skipped_test_count() { return g_skipped; }

}  // namespace attnlab::testing
