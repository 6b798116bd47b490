// attnlab_merge's work (issue 16): the tables of shards 1..N of each experiment, concatenated in shard
// order into one directory, which the experiment's --judge then judges exactly as an unsharded run.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace attnlab {

// Thrown when the shards cannot be merged; the message is one line naming the directory or stamp at fault.
struct MergeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Finds every <experiment>.shard.json in `shard_dirs` and, for each experiment, checks that:
//   every shard 1..N is present exactly once (a missing or duplicate shard is named), all with the
//   same N, seed, quick/full and build; every table matches its stamp (size and CRC-32); every shard
//   wrote the same tables with the same header; quick shards carry the quick marker.
// Only then writes into `out`, per table: the header once, then each shard's rows in shard order; then
// <experiment>.merged.json (every shard's host and CPU in it), and the quick marker for quick shards.
// Artifacts (stamped files other than tables, such as checkpoints) are copied as they are; two shards
// that wrote the same artifact are refused.
// `out` may not be one of the shard directories, and may not hold a quick run when the shards are full
// or the reverse, nor another run (claims.csv or a stamp) unless `replace`: then everything is written
// into a new directory beside `out`, which takes its place (the old `out`, with all it held, is removed).
// Nothing is written when any check fails. Returns the merged experiments' names, sorted.
std::vector<std::string> merge_shards(const std::vector<std::filesystem::path>& shard_dirs,
                                      const std::filesystem::path& out, bool replace = false);

}  // namespace attnlab
