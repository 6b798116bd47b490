#include "attnlab/lab/shard_merge.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <unistd.h>
#include <fmt/ranges.h>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>

#include "attnlab/io/atomic_file.hpp"
#include "attnlab/io/file_digest.hpp"
#include "attnlab/lab/quick_marker.hpp"
#include "attnlab/lab/shard_stamp.hpp"

namespace attnlab {

namespace {

namespace fs = std::filesystem;

struct Found {
  ShardStamp stamp;
  fs::path dir;
};

std::string read_whole(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw MergeError(path.string() + ": cannot be read");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The header line and the rows (everything after the first newline) of a table's text. Tables are
// written by CsvTable: a header line without quoted newlines, then one line per row.
std::pair<std::string, std::string> split_header(const std::string& text, const fs::path& path) {
  const auto nl = text.find('\n');
  if (nl == std::string::npos) throw MergeError(path.string() + ": no header line");
  return {text.substr(0, nl + 1), text.substr(nl + 1)};
}

bool same_directory(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec);
}

// What in `dir` shows it holds a run: claims.csv or a stamp; "" when nothing does.
std::string run_evidence(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / "claims.csv", ec)) return "claims.csv";
  std::vector<std::string> stamps;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.ends_with(".run.json") || name.ends_with(".merged.json") || name.ends_with(".shard.json")) stamps.push_back(name);
  }
  std::sort(stamps.begin(), stamps.end());
  return stamps.empty() ? std::string() : stamps.front();
}

void write_outputs(const fs::path& dir, const std::vector<std::pair<fs::path, std::string>>& files) {
  for (const auto& [rel, text] : files) {
    fs::create_directories((dir / rel).parent_path());
    write_file_atomically(dir / rel, text);
  }
}

}  // namespace

std::vector<std::string> merge_shards(const std::vector<fs::path>& shard_dirs, const fs::path& out, bool replace) {
  if (shard_dirs.empty()) throw MergeError("no shard directories given");
  // 1. Every stamp in every directory, grouped by experiment.
  std::map<std::string, std::vector<Found>> by_experiment;
  for (const auto& dir : shard_dirs) {
    if (!fs::is_directory(dir)) throw MergeError(fmt::format("{}: not a directory", dir.string()));
    if (same_directory(dir, out)) throw MergeError(fmt::format("--out {} is one of the shard directories", out.string()));
    std::vector<fs::path> stamps;
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (name.ends_with(".shard.json")) stamps.push_back(entry.path());
    }
    if (stamps.empty())
      throw MergeError(fmt::format("{}: no <experiment>.shard.json stamp: the shard did not finish (rerun it) or this is "
                                   "not a shard directory", dir.string()));
    std::sort(stamps.begin(), stamps.end());
    for (const auto& p : stamps) {
      ShardStamp s;
      try {
        s = read_stamp(p);
      } catch (const StampError& e) {
        throw MergeError(e.what());
      }
      if (s.merged) throw MergeError(fmt::format("{}: a merged stamp, not a shard's", p.string()));
      if (p.filename() != shard_stamp_path("", s.experiment).filename())
        throw MergeError(fmt::format("{}: names experiment '{}'", p.string(), s.experiment));
      by_experiment[s.experiment].push_back({std::move(s), dir});
    }
  }

  // 2. Check each experiment's shards and build the merged texts in memory.
  struct Output {
    fs::path path;
    std::string text;
  };
  std::vector<Output> outputs;
  std::optional<bool> quick;
  std::vector<std::string> merged_names;
  for (auto& [experiment, found] : by_experiment) {
    const ShardStamp& first = found.front().stamp;
    const fs::path first_stamp = shard_stamp_path(found.front().dir, experiment);
    std::vector<const Found*> slot(static_cast<std::size_t>(first.shards), nullptr);
    for (const Found& f : found) {
      const ShardStamp& s = f.stamp;
      const fs::path here = shard_stamp_path(f.dir, experiment);
      auto differ = [&](const char* what, const std::string& a, const std::string& b) {
        throw MergeError(fmt::format("{}: {} {} differs from {}'s {}: shards of different runs cannot be merged",
                                     here.string(), what, b, first_stamp.string(), a));
      };
      if (s.shards != first.shards) differ("shard count", std::to_string(first.shards), std::to_string(s.shards));
      if (s.seed != first.seed) differ("seed", std::to_string(first.seed), std::to_string(s.seed));
      if (s.quick != first.quick) differ("mode", first.quick ? "quick" : "full", s.quick ? "quick" : "full");
      if (s.build != first.build) differ("build", first.build, s.build);
      if (s.options != first.options)
        differ("options", fmt::format("'{}'", first.options), fmt::format("'{}'", s.options));
      if (s.sweeps != first.sweeps) differ("sweep sizes", fmt::format("[{}]", fmt::join(first.sweeps, ", ")),
                                           fmt::format("[{}]", fmt::join(s.sweeps, ", ")));
      const Found*& at = slot[static_cast<std::size_t>(s.shard - 1)];
      if (at != nullptr)
        throw MergeError(fmt::format("{}: shard {}/{} of {} given twice (also {})", here.string(), s.shard, s.shards,
                                     experiment, shard_stamp_path(at->dir, experiment).string()));
      at = &f;
      try {
        check_stamped_tables(s, f.dir);
      } catch (const StampError& e) {
        throw MergeError(e.what());
      }
      if (s.quick && !fs::exists(f.dir / kQuickMarker))
        throw MergeError(fmt::format("{}: a quick shard's directory without its {} marker", f.dir.string(), kQuickMarker));
    }
    std::vector<std::string> missing;
    for (std::size_t i = 0; i < slot.size(); ++i)
      if (slot[i] == nullptr) missing.push_back(fmt::format("{}/{}", i + 1, first.shards));
    if (!missing.empty())
      throw MergeError(fmt::format("{}: shard {} missing (not given, or its task has not finished: no stamp)", experiment,
                                   fmt::join(missing, ", ")));
    if (quick && *quick != first.quick)
      throw MergeError(fmt::format("{}: {} shards among {} ones: merge quick and full runs apart", experiment,
                                   first.quick ? "quick" : "full", *quick ? "quick" : "full"));
    quick = first.quick;

    ShardStamp merged = first;
    merged.merged = true;
    merged.shard = 0;
    merged.hosts.clear();
    merged.tables.clear();
    merged.artifacts.clear();
    for (const Found* f : slot) {
      if (f->stamp.hosts.size() != 1)
        throw MergeError(fmt::format("{}: a shard's stamp names {} hosts, not one", shard_stamp_path(f->dir, experiment).string(),
                                     f->stamp.hosts.size()));
      merged.hosts.push_back(f->stamp.hosts.front());
    }
    for (std::size_t t = 0; t < first.tables.size(); ++t) {
      const std::string& file = first.tables[t].file;
      std::string header, rows;
      for (const Found* f : slot) {
        if (f->stamp.tables.size() != first.tables.size() || f->stamp.tables[t].file != file)
          throw MergeError(fmt::format("{}: its tables differ from {}'s (a shard of another version of the experiment)",
                                       shard_stamp_path(f->dir, experiment).string(), first_stamp.string()));
        const auto [h, r] = split_header(read_whole(f->dir / file), f->dir / file);
        if (f == slot.front()) header = h;
        else if (h != header)
          throw MergeError(fmt::format("{}: header differs from shard 1's", (f->dir / file).string()));
        rows += r;
      }
      const std::string text = header + rows;
      merged.tables.push_back({file, digest_text(text)});
      outputs.push_back({out / file, text});
    }
    // Artifacts (checkpoints, say) belong to one shard each and are copied as they are.
    std::map<std::string, int> owner;
    for (const Found* f : slot)
      for (const auto& a : f->stamp.artifacts) {
        if (const auto [it, fresh] = owner.emplace(a.file, f->stamp.shard); !fresh)
          throw MergeError(fmt::format("{}: shards {} and {} both wrote {}", experiment, it->second, f->stamp.shard, a.file));
        merged.artifacts.push_back(a);
        outputs.push_back({out / a.file, read_whole(f->dir / a.file)});
      }
    outputs.push_back({merged_stamp_path(out, experiment), stamp_json(merged)});
    merged_names.push_back(experiment);
  }

  // 3. The output directory: quick and full never mix (quick_marker.hpp), and a run already there is
  // replaced whole or not at all (a merge beside another run's tables and ledger would mix two runs).
  const std::string evidence = fs::exists(out) ? run_evidence(out) : std::string();
  if (replace && !evidence.empty()) {
    // Everything goes to a new directory beside --out, which then takes --out's place.
    const fs::path parent = out.parent_path().empty() ? fs::path(".") : out.parent_path();
    const std::string base = out.filename().empty() ? out.parent_path().filename().string() : out.filename().string();
    const fs::path stage = parent / fmt::format(".{}.merge.{}", base, ::getpid()), old = parent / fmt::format(".{}.replaced.{}", base, ::getpid());
    std::error_code ec;
    fs::remove_all(stage, ec);
    try {
      ensure_writable_directory(stage);
    } catch (const OutputError& e) {
      throw MergeError(fmt::format("--out: {}", e.what()));
    }
    std::vector<std::pair<fs::path, std::string>> files;
    if (*quick) files.push_back({kQuickMarker, kQuickMarkerText});
    for (const auto& o : outputs) files.push_back({o.path.lexically_relative(out), o.text});
    write_outputs(stage, files);
    fs::rename(out, old);
    fs::rename(stage, out);
    fs::remove_all(old, ec);
    return merged_names;
  }
  try {
    ensure_writable_directory(out);
  } catch (const OutputError& e) {
    throw MergeError(fmt::format("--out: {}", e.what()));
  }
  const bool out_quick = fs::exists(out / kQuickMarker);
  if (*quick && !out_quick && fs::exists(out / "claims.csv"))
    throw MergeError(fmt::format("--out {} holds a full run's claims.csv; merge quick shards elsewhere", out.string()));
  if (!*quick && out_quick)
    throw MergeError(fmt::format("--out {} holds --quick results ({}); merge full shards elsewhere", out.string(), kQuickMarker));
  if (!evidence.empty())
    throw MergeError(fmt::format("--out {} holds another run ({}); merge into an empty directory, or give --replace to "
                                 "replace that run whole", out.string(), evidence));
  for (const auto& o : outputs) {
    try {
      check_output_file(o.path);
    } catch (const OutputError& e) {
      throw MergeError(e.what());
    }
  }
  // 4. Write: the tables first, each experiment's merged stamp after its tables, the marker before all.
  if (*quick && !out_quick) write_file_atomically(out / kQuickMarker, kQuickMarkerText);
  for (const auto& o : outputs) {
    fs::create_directories(o.path.parent_path());
    write_file_atomically(o.path, o.text);
  }
  return merged_names;
}

}  // namespace attnlab
