// The stamp a shard run leaves beside its tables (<experiment>.shard.json) and the one attnlab_merge
// leaves beside the merged tables (<experiment>.merged.json), issue 16. A stamp says what the tables
// are (experiment, shard I of N, seed, quick or full, the build that measured them, where it ran) and
// pins each table's size and CRC-32, so a half-written, replaced or foreign table is refused. A shard
// writes its stamp last, after removing any old one: a task killed midway leaves no stamp, and the
// merge refuses until the task has been rerun to completion.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnlab/io/file_digest.hpp"

namespace attnlab {

// Thrown for a missing, malformed or inconsistent stamp; the message names the file.
struct StampError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct StampedTable {
  std::string file;  // a name inside the stamp's directory
  FileDigest digest;
};

struct StampHost {
  int shard = 1;  // which shard ran there
  std::string host, cpu;
};

struct ShardStamp {
  bool merged = false;      // <experiment>.merged.json: every shard 1..shards concatenated
  std::string experiment;
  int shard = 1, shards = 1;  // merged: shard is 0
  std::uint64_t seed = 0;
  bool quick = false;
  std::string build;         // build_id() and build_isa() of the program that measured ("<commit> avx512")
  // The experiment's own flags as given (ExperimentCli::measurement_options(), e.g. "--method exact
  // --epochs 3"): shards of one run were all given the same ones.
  std::string options;
  std::vector<std::uint64_t> sweeps;  // the sizes of the sweeps the experiment enumerated (Shard::range), in order
  std::vector<StampHost> hosts;  // one for a shard; one per shard, in shard order, for a merged directory
  std::vector<StampedTable> tables;  // in the order the experiment wrote them
  // Other files the run wrote, by path relative to the directory (e.g. checkpoints/exact/manifest.json):
  // each belongs to one shard and is copied as it is by the merge.
  std::vector<StampedTable> artifacts;
};

std::filesystem::path shard_stamp_path(const std::filesystem::path& dir, const std::string& experiment);
std::filesystem::path merged_stamp_path(const std::filesystem::path& dir, const std::string& experiment);

// The stamp as JSON text, and back. read_stamp throws StampError naming the file for anything that is
// not a stamp this version wrote (unknown format, missing or mistyped field, a table name with a path, an
// artifact path that is absolute, climbs with "..", or is hidden).
std::string stamp_json(const ShardStamp& stamp);
ShardStamp read_stamp(const std::filesystem::path& path);

// Throws StampError naming the first table or artifact of `stamp` in `dir` that is missing or whose size
// or CRC-32 differs from the stamp's.
void check_stamped_tables(const ShardStamp& stamp, const std::filesystem::path& dir);

// This machine's host name and CPU model (/proc/cpuinfo's "model name"; "unknown" where unreadable).
std::string this_host();
std::string this_cpu();

}  // namespace attnlab
