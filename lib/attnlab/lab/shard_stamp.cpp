#include "attnlab/lab/shard_stamp.hpp"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <chrono>
#include <fstream>
#include <limits>
#include <set>
#include <unistd.h>

#include "attnlab/io/bounded_file.hpp"
#include "attnlab/io/json_reader.hpp"
#include "attnlab/io/ledger.hpp"
#include "attnlab/io/printable.hpp"
#include "attnlab/lab/shard.hpp"

namespace attnlab {

namespace {

constexpr const char* kShardFormat = "attnlab-shard-2";
constexpr const char* kMergedFormat = "attnlab-merged-2";
constexpr const char* kRunFormat = "attnlab-run-1";
// A stamp is a few lines per table: a larger file is not one (read_stamp refuses it unread).
constexpr std::uint64_t kMaxStampBytes = std::uint64_t{16} << 20;

// JSON string escaping for the few fields a stamp holds (names, host, CPU model).
std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (static_cast<unsigned char>(c) < 0x20) out += ' ';  // the reader knows no \u escapes
    else out += c;
  }
  return out + "\"";
}

std::uint64_t parse_u64(const std::string& s, const std::filesystem::path& path, const char* key) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    throw StampError(fmt::format("{}: '{}' is not an unsigned integer: '{}'", path.string(), key, escaped(s)));
  return v;
}

bool json_bool_field(const JsonObject& o, const std::string& key) {
  const Json& j = json_field(o, key);
  if (!std::holds_alternative<bool>(j.v)) throw std::runtime_error("'" + key + "' is not true or false");
  return std::get<bool>(j.v);
}

// A shard number or count: an int (json_int_field allows +-2^53, which a cast to int would wrap into range).
int json_count_field(const JsonObject& o, const std::string& key) {
  const std::int64_t v = json_int_field(o, key);
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    throw std::runtime_error("'" + key + "' is out of range");
  return static_cast<int>(v);
}

// A name the stamp's directory holds as it is: not empty, no '/', not hidden (nor "." or "..").
bool plain_name(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && !name.starts_with(".");
}

const JsonArray& json_array_field(const JsonObject& o, const std::string& key) {
  const Json& j = json_field(o, key);
  if (!std::holds_alternative<std::shared_ptr<JsonArray>>(j.v)) throw std::runtime_error("'" + key + "' is not an array");
  return *std::get<std::shared_ptr<JsonArray>>(j.v);
}

}  // namespace

std::filesystem::path shard_stamp_path(const std::filesystem::path& dir, const std::string& experiment) {
  return dir / (experiment + ".shard.json");
}
std::filesystem::path merged_stamp_path(const std::filesystem::path& dir, const std::string& experiment) {
  return dir / (experiment + ".merged.json");
}
std::filesystem::path run_stamp_path(const std::filesystem::path& dir, const std::string& experiment) {
  return dir / (experiment + ".run.json");
}
std::filesystem::path stamp_path(const std::filesystem::path& dir, const ShardStamp& stamp) {
  return stamp.run ? run_stamp_path(dir, stamp.experiment)
                   : stamp.merged ? merged_stamp_path(dir, stamp.experiment) : shard_stamp_path(dir, stamp.experiment);
}

std::string new_run_id() {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return fmt::format("{}-{}-{:x}", this_host(), static_cast<long>(::getpid()), static_cast<unsigned long long>(ns));
}

std::string stamp_json(const ShardStamp& s) {
  std::string out = "{\n";
  out += fmt::format("  \"format\": {},\n", json_quote(s.run ? kRunFormat : s.merged ? kMergedFormat : kShardFormat));
  out += fmt::format("  \"experiment\": {},\n", json_quote(s.experiment));
  if (s.run)
    out += fmt::format("  \"run\": {},\n  \"finished\": {},\n  \"previous_run\": {},\n", json_quote(s.run_id),
                       s.finished ? "true" : "false", json_quote(s.previous_run));
  out += fmt::format("  \"shard\": {},\n  \"shards\": {},\n", s.shard, s.shards);
  // The seed as a string: JSON numbers are doubles, which cannot hold every 64-bit seed.
  out += fmt::format("  \"seed\": \"{}\",\n", s.seed);
  out += fmt::format("  \"quick\": {},\n", s.quick ? "true" : "false");
  out += fmt::format("  \"build\": {},\n", json_quote(s.build));
  out += fmt::format("  \"options\": {},\n", json_quote(s.options));
  out += "  \"sweeps\": [";
  for (std::size_t i = 0; i < s.sweeps.size(); ++i) out += fmt::format("{}{}", i ? ", " : "", s.sweeps[i]);
  out += "],\n";
  out += "  \"hosts\": [";
  for (std::size_t i = 0; i < s.hosts.size(); ++i)
    out += fmt::format("{}\n    {{\"shard\": {}, \"host\": {}, \"cpu\": {}}}", i ? "," : "", s.hosts[i].shard,
                       json_quote(s.hosts[i].host), json_quote(s.hosts[i].cpu));
  out += s.hosts.empty() ? "],\n" : "\n  ],\n";
  out += "  \"tables\": [";
  for (std::size_t i = 0; i < s.tables.size(); ++i)
    out += fmt::format("{}\n    {{\"file\": {}, \"bytes\": {}, \"crc32\": {}}}", i ? "," : "", json_quote(s.tables[i].file),
                       s.tables[i].digest.bytes, s.tables[i].digest.crc32);
  out += s.tables.empty() ? "],\n" : "\n  ],\n";
  out += "  \"artifacts\": [";
  for (std::size_t i = 0; i < s.artifacts.size(); ++i)
    out += fmt::format("{}\n    {{\"file\": {}, \"bytes\": {}, \"crc32\": {}}}", i ? "," : "", json_quote(s.artifacts[i].file),
                       s.artifacts[i].digest.bytes, s.artifacts[i].digest.crc32);
  out += s.artifacts.empty() ? "]\n" : "\n  ]\n";
  return out + "}\n";
}

ShardStamp read_stamp(const std::filesystem::path& path) {
  std::string text;
  try {
    // Bounded and without blocking: a FIFO or device in a shard directory is refused at once.
    text = read_bounded_text(path, kMaxStampBytes, "the 16 MiB a stamp may hold");
  } catch (const BoundedFileError& e) {
    throw StampError(fmt::format("{}: no stamp ({})", path.string(), e.problem()));
  }
  return parse_stamp(text, path);
}

ShardStamp parse_stamp(const std::string& text, const std::filesystem::path& path) {
  ShardStamp s;
  try {
    const Json root = parse_json(text);  // kept alive: json_object returns a reference into it
    const JsonObject& o = json_object(root, "stamp");
    const std::string format = json_string_field(o, "format");
    if (format != kShardFormat && format != kMergedFormat && format != kRunFormat)
      throw std::runtime_error(fmt::format("unknown format '{}' (this build writes {}, {} and {})", escaped(format), kShardFormat,
                                           kMergedFormat, kRunFormat));
    s.merged = format == kMergedFormat;
    s.run = format == kRunFormat;
    s.experiment = json_string_field(o, "experiment");
    if (s.run) {
      s.run_id = json_string_field(o, "run");
      s.finished = json_bool_field(o, "finished");
      s.previous_run = json_string_field(o, "previous_run");
    }
    s.shard = json_count_field(o, "shard");
    s.shards = json_count_field(o, "shards");
    s.seed = parse_u64(json_string_field(o, "seed"), path, "seed");
    s.quick = json_bool_field(o, "quick");
    s.build = json_string_field(o, "build");
    s.options = json_string_field(o, "options");
    for (const Json& n : json_array_field(o, "sweeps")) {
      if (!std::holds_alternative<double>(n.v) || !(std::get<double>(n.v) >= 0) || std::get<double>(n.v) > 9007199254740992.0 ||
          std::get<double>(n.v) != static_cast<double>(static_cast<std::uint64_t>(std::get<double>(n.v))))
        throw std::runtime_error("'sweeps' holds something other than sizes");
      s.sweeps.push_back(static_cast<std::uint64_t>(std::get<double>(n.v)));
    }
    for (const Json& h : json_array_field(o, "hosts")) {
      const JsonObject& ho = json_object(h, "hosts entry");
      s.hosts.push_back({json_count_field(ho, "shard"), json_string_field(ho, "host"),
                         json_string_field(ho, "cpu")});
    }
    auto files = [&](const char* key, std::vector<StampedTable>& into) {
      for (const Json& t : json_array_field(o, key)) {
        const JsonObject& to = json_object(t, std::string(key) + " entry");
        const std::int64_t bytes = json_int_field(to, "bytes"), crc = json_int_field(to, "crc32");
        if (bytes < 0 || crc < 0 || crc > 0xffffffffLL) throw std::runtime_error(std::string("bytes or crc32 out of range in ") + key);
        into.push_back({json_string_field(to, "file"), {static_cast<std::uint64_t>(bytes), static_cast<std::uint32_t>(crc)}});
      }
    };
    files("tables", s.tables);
    files("artifacts", s.artifacts);
  } catch (const std::exception& e) {
    throw StampError(fmt::format("{}: not a valid stamp: {}", path.string(), e.what()));
  }
  // Shard's own rule (1 <= I <= N <= its bound): a merge keeps one slot per shard of the count.
  auto possible = [](int index, int count) {
    try {
      static_cast<void>(Shard(index, count));
      return true;
    } catch (const std::invalid_argument&) {
      return false;
    }
  };
  const bool shard_ok = s.merged ? (s.shard == 0 && possible(1, s.shards))
                      : s.run  ? (s.shard == 1 && s.shards == 1)
                               : possible(s.shard, s.shards);
  if (!shard_ok) throw StampError(fmt::format("{}: shard {} of {} is not possible", path.string(), s.shard, s.shards));
  for (const auto& h : s.hosts)
    if (!possible(h.shard, s.shards))
      throw StampError(fmt::format("{}: a host ran shard {}, not one of 1..{}", path.string(), h.shard, s.shards));
  // The stamp's own file and the merged stamp are <experiment>.<kind>.json in the directory.
  if (!plain_name(s.experiment))
    throw StampError(fmt::format("{}: experiment '{}' is not a plain name", path.string(), escaped(s.experiment)));
  for (const auto& t : s.tables)
    if (!plain_name(t.file))
      throw StampError(fmt::format("{}: table name '{}' is not a plain file name", path.string(), escaped(t.file)));
  for (const auto& a : s.artifacts) {
    const std::filesystem::path rel(a.file);
    bool plain = !a.file.empty() && rel.is_relative();
    for (const auto& part : rel) plain = plain && !part.empty() && part.string().front() != '.';
    if (!plain)
      throw StampError(fmt::format("{}: artifact path '{}' is not a plain relative path", path.string(), escaped(a.file)));
  }
  return s;
}

void check_stamped_tables(const ShardStamp& stamp, const std::filesystem::path& dir) {
  std::vector<StampedTable> all = stamp.tables;
  all.insert(all.end(), stamp.artifacts.begin(), stamp.artifacts.end());
  for (const auto& t : all) {
    const auto path = dir / t.file;
    if (!std::filesystem::is_regular_file(path))
      throw StampError(fmt::format("{}: missing, though {} lists it", path.string(), stamp_path(dir, stamp).filename().string()));
    FileDigest d;
    try {
      d = digest_file(path);
    } catch (const std::exception& e) {
      throw StampError(e.what());
    }
    if (!(d == t.digest))
      throw StampError(fmt::format("{}: {} bytes, CRC-32 {}, but its stamp says {} bytes, CRC-32 {} (changed or half-written "
                                   "since the stamp was written)", path.string(), d.bytes, d.crc32, t.digest.bytes, t.digest.crc32));
  }
}

namespace {

// The files of `stamp` in `dir` that are as it pins them, and the others.
std::pair<std::vector<std::string>, std::vector<std::string>> stamped_files_as_pinned(const ShardStamp& stamp,
                                                                                      const std::filesystem::path& dir) {
  std::vector<std::string> same, changed;
  std::vector<StampedTable> all = stamp.tables;
  all.insert(all.end(), stamp.artifacts.begin(), stamp.artifacts.end());
  for (const auto& t : all) {
    bool ok = false;
    try {
      ok = digest_file(dir / t.file) == t.digest;
    } catch (const std::exception&) {
      // missing or unreadable: not as pinned
    }
    (ok ? same : changed).push_back(t.file);
  }
  return {same, changed};
}

}  // namespace

void check_run_set(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::vector<fs::path> stamps;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.ends_with(".run.json") && name.size() > 9 && !name.starts_with(".")) stamps.push_back(entry.path());
  }
  if (stamps.empty()) return;  // written before runs were stamped
  std::sort(stamps.begin(), stamps.end());
  std::vector<std::string> problems;
  std::set<std::string> stamped;
  for (const auto& path : stamps) {
    ShardStamp s;
    try {
      s = read_stamp(path);
    } catch (const StampError& e) {
      problems.push_back(e.what());
      continue;
    }
    stamped.insert(s.experiment);
    const auto [same, changed] = stamped_files_as_pinned(s, dir);
    if (!s.finished) {
      std::string which;
      if (!s.previous_run.empty())
        which = fmt::format(" ({} still run {}'s; {} not)", same.empty() ? "none" : fmt::format("{}", fmt::join(same, ", ")),
                            s.previous_run, changed.empty() ? "none" : fmt::format("{}", fmt::join(changed, ", ")));
      problems.push_back(fmt::format("{}: run {} did not finish, so its files may mix with an earlier run's{}", s.experiment,
                                     s.run_id, which));
    } else if (!changed.empty()) {
      problems.push_back(fmt::format("{}: {} not as run {} wrote them (still its: {})", s.experiment, fmt::join(changed, ", "),
                                     s.run_id, same.empty() ? "none" : fmt::format("{}", fmt::join(same, ", "))));
    }
  }
  try {
    for (const char* ledger : {kClaimsFile, kCorrectionsFile}) {
      std::set<std::string> unstamped;
      for (const auto& row : read_ledger(dir / ledger))
        if (stamped.count(row.experiment) == 0) unstamped.insert(row.experiment);
      for (const auto& e : unstamped) problems.push_back(fmt::format("{}: rows in {}, but no {}.run.json", e, ledger, e));
    }
  } catch (const std::exception& e) {
    problems.push_back(e.what());
  }
  if (!problems.empty())
    throw StampError(fmt::format("{}: not one finished run per experiment: {}", dir.string(), fmt::join(problems, "; ")));
}

std::string this_host() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "unknown";
  return name;
}

std::string this_cpu() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with("model name")) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) break;
      auto start = line.find_first_not_of(" \t", colon + 1);
      return start == std::string::npos ? "unknown" : line.substr(start);
    }
  return "unknown";
}

}  // namespace attnlab
