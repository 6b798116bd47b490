// The stamp a shard run leaves beside its tables (<experiment>.shard.json), the one attnlab_merge
// leaves beside the merged tables (<experiment>.merged.json), and a whole run's (<experiment>.run.json).
// A stamp says what the tables are (experiment, shard I of N, seed, quick or full, the build that measured them, where it ran) and
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
  // <experiment>.run.json: a run that wrote ledger rows (a whole run, or --judge of a merged directory),
  // shard 1 of 1. Written twice: unfinished when the run starts, replacing the previous run's stamp, and
  // finished, with every table and artifact, after its last file; a run killed midway leaves the
  // unfinished one, so its directory is refused (check_run_set) until a run finishes there.
  bool run = false;
  bool finished = true;     // run stamps only
  std::string run_id;       // run stamps only: "<host>-<pid>-<start time in ns>", unique per run
  // An unfinished run stamp: the run it replaces ("" for none); its tables and artifacts are that run's,
  // so a reader can say which files are still the previous run's and which the unfinished run rewrote.
  std::string previous_run;
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
std::filesystem::path run_stamp_path(const std::filesystem::path& dir, const std::string& experiment);
// The path of `stamp`'s own file in `dir` (by its kind).
std::filesystem::path stamp_path(const std::filesystem::path& dir, const ShardStamp& stamp);

// The stamp as JSON text, and back. read_stamp throws StampError naming the file for anything that is
// not a stamp this version wrote (unknown format, missing or mistyped field, a shard number or count
// outside Shard's bounds, an experiment or table name with a path or hidden, an artifact path that is
// absolute, climbs with "..", or is hidden), in one line (the file's own text with \xNN escapes).
std::string stamp_json(const ShardStamp& stamp);
ShardStamp read_stamp(const std::filesystem::path& path);
// The checks of read_stamp on a stamp's text already read; `path` only names it in the messages.
ShardStamp parse_stamp(const std::string& text, const std::filesystem::path& path);

// Throws StampError naming the first table or artifact of `stamp` in `dir` that is missing or whose size
// or CRC-32 differs from the stamp's.
void check_stamped_tables(const ShardStamp& stamp, const std::filesystem::path& dir);

// Whether `dir`'s runs are each whole: every run stamp (*.run.json) finished and its tables and artifacts
// as it pins them, and, once the directory holds any run stamp, every experiment that has rows in
// claims.csv stamped. Throws StampError with one line naming each experiment whose files do not form one
// finished run, and which of its tables belong to no finished run. A directory without run stamps
// (written before runs were stamped) passes.
void check_run_set(const std::filesystem::path& dir);

// A new run id: "<host>-<pid>-<nanoseconds since the epoch, hex>".
std::string new_run_id();

// This machine's host name and CPU model (/proc/cpuinfo's "model name"; "unknown" where unreadable).
std::string this_host();
std::string this_cpu();

}  // namespace attnlab
