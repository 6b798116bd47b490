// libFuzzer entry for the stamps a run leaves beside its tables (<experiment>.shard.json, .merged.json and
// .run.json, one reader): any text is parsed, or refused with one clean StampError line.
//
// Built and run by `make fuzz` (clang++ -fsanitize=fuzzer,address,undefined). Besides the sanitizers'
// checks, an input fails when parsing throws anything but StampError, when the message is not one
// printable line starting with the stamp's name, or when an accepted stamp
//   - holds a shard number other than the text's (a count silently wrapped into range), or one outside
//     Shard's bounds (a merge keeps a slot per shard of the count),
//   - names a stamp file, table or artifact outside its own directory (a path in the experiment's name),
//   - does not survive being written and read back unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "attnlab/io/json_reader.hpp"
#include "attnlab/lab/shard.hpp"
#include "attnlab/lab/shard_stamp.hpp"

namespace {

const std::filesystem::path kName = "fuzz.shard.json";

bool clean_line(const std::string& s) {
  if (s.rfind(kName.string() + ": ", 0) != 0) return false;
  for (const char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  return true;
}

// The number the text itself gives for `key` (the reader accepted the text, so it is there and a number).
double text_number(const attnlab::JsonObject& o, const std::string& key) {
  return std::get<double>(attnlab::json_field(o, key).v);
}

bool same_files(const std::vector<attnlab::StampedTable>& a, const std::vector<attnlab::StampedTable>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].file != b[i].file || !(a[i].digest == b[i].digest)) return false;
  return true;
}

bool same(const attnlab::ShardStamp& a, const attnlab::ShardStamp& b) {
  if (a.hosts.size() != b.hosts.size()) return false;
  for (std::size_t i = 0; i < a.hosts.size(); ++i)
    if (a.hosts[i].shard != b.hosts[i].shard || a.hosts[i].host != b.hosts[i].host || a.hosts[i].cpu != b.hosts[i].cpu)
      return false;
  return a.merged == b.merged && a.run == b.run && a.finished == b.finished && a.run_id == b.run_id &&
         a.previous_run == b.previous_run && a.experiment == b.experiment && a.shard == b.shard && a.shards == b.shards &&
         a.seed == b.seed && a.quick == b.quick && a.build == b.build && a.options == b.options && a.sweeps == b.sweeps &&
         same_files(a.tables, b.tables) && same_files(a.artifacts, b.artifacts);
}

bool possible(int index, int count) {
  try {
    static_cast<void>(attnlab::Shard(index, count));
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

// `rel` inside `dir`: relative, no "." or ".." part.
bool inside(const std::filesystem::path& rel) {
  if (rel.empty() || !rel.is_relative()) return false;
  for (const auto& part : rel)
    if (part.empty() || part == "." || part == "..") return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  attnlab::ShardStamp s;
  try {
    s = attnlab::parse_stamp(text, kName);
  } catch (const attnlab::StampError& e) {
    if (!clean_line(e.what())) std::abort();
    return 0;
  }
  const attnlab::Json root = attnlab::parse_json(text);
  const attnlab::JsonObject& o = attnlab::json_object(root, "stamp");
  if (text_number(o, "shard") != s.shard || text_number(o, "shards") != s.shards) std::abort();
  const attnlab::JsonArray& hosts = *std::get<std::shared_ptr<attnlab::JsonArray>>(attnlab::json_field(o, "hosts").v);
  for (std::size_t i = 0; i < hosts.size(); ++i)
    if (text_number(attnlab::json_object(hosts[i], "host"), "shard") != s.hosts[i].shard) std::abort();
  if (!possible(s.merged ? 1 : s.shard, s.shards)) std::abort();
  for (const auto& h : s.hosts)
    if (!possible(h.shard, s.shards)) std::abort();

  const std::filesystem::path dir = "d";
  if (attnlab::stamp_path(dir, s).parent_path() != dir || !inside(s.experiment)) std::abort();
  for (const auto& t : s.tables)
    if (!inside(t.file) || std::filesystem::path(t.file).has_parent_path()) std::abort();
  for (const auto& a : s.artifacts)
    if (!inside(a.file)) std::abort();

  const std::string written = attnlab::stamp_json(s);
  const attnlab::ShardStamp back = attnlab::parse_stamp(written, kName);
  if (!same(s, back) || attnlab::stamp_json(back) != written) std::abort();
  return 0;
}
