// Multi-query associative recall, bidirectional and "stacked" (recall_spec.md): the task's sizes, one sequence
// drawn from a seed, and the data sets the trainer takes (the training stream, the validation split, the test
// set), every sequence a function of its split's seed and its index alone, so that any shard, thread count or
// resumed run draws the same ones.
//
// A sequence holds N context tokens and N query tokens at shuffled positions. Context token j carries the pair
// (key_j, value_j); the query of pair j carries key_j alone, and its label is value_j. The N keys are distinct,
// drawn from a vocabulary of `keys`; the values from a vocabulary of `values`, independently (they may repeat).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Core>

namespace attnlab {

struct RecallTask {
  Eigen::Index pairs = 32;    // N: the context's (key, value) pairs, each queried once
  Eigen::Index keys = 1024;   // the key vocabulary
  Eigen::Index values = 256;  // the value vocabulary: the classes of every query's prediction
  Eigen::Index length() const { return 2 * pairs; }  // tokens per sequence
  bool operator==(const RecallTask&) const = default;
};

// The largest vocabularies and pair count a task may have: a value is a label byte, and the key and pair counts
// stay far inside int32 (the test set's .npy files) and memory.
inline constexpr Eigen::Index kRecallMaxValues = 256;
inline constexpr Eigen::Index kRecallMaxKeys = Eigen::Index{1} << 20;
inline constexpr Eigen::Index kRecallMaxPairs = Eigen::Index{1} << 14;

// "" when the task can be drawn (1 <= pairs <= kRecallMaxPairs, pairs <= keys <= kRecallMaxKeys: N distinct keys;
// 1 <= values <= kRecallMaxValues), else one line naming the bad size.
std::string recall_task_problem(const RecallTask& task);

// One sequence's tokens, by position t = 0 .. 2N-1.
struct RecallSequence {
  std::vector<std::int32_t> key;    // every token's key
  std::vector<std::int32_t> value;  // a context token's value; -1 at a query token
  std::vector<std::int32_t> label;  // a query token's answer (its key's value); -1 at a context token
};

// The sequence of `seed` (recall_spec.md, "One sequence"), from one Rng(seed), in this order:
//   1. the keys: for j = 0 .. N-1, key_j = floor(u * keys), drawn again while it equals an earlier key_i;
//   2. the values: for j = 0 .. N-1, value_j = floor(u * values);
//   3. the positions: pi = shuffled_indices(2N) (core/rng.hpp's Fisher-Yates); pair j's context token sits at
//      position pi[j], its query at pi[N + j].
// u is Rng::uniform(). Throws std::invalid_argument for a task recall_task_problem refuses.
RecallSequence recall_sequence(const RecallTask& task, std::uint64_t seed);

// Where a split's sequences come from: a run's training stream is its own, drawn from the run's seed; the
// validation split (for choosing the protocol) and the test set are shared by every run of a sweep, drawn from
// the sweep's base seed. The splits' seeds are derived apart, so that no test sequence is ever a training or a
// validation sequence's draw.
enum class RecallSplit { train, validation, test };
std::uint64_t recall_split_seed(std::uint64_t seed, RecallSplit split);

// The sequences of one split, as the trainer takes them (trainer.hpp): item i is
// recall_sequence(task, derive_seed(seed, i)), for i = 0 .. count-1; its labels are its queries' answers in
// position order (one per row of logits the recall model gives it).
struct RecallSet {
  RecallTask task;
  std::uint64_t seed = 0;  // recall_split_seed(...) of the split
  std::int64_t size = 0;
  std::int64_t count() const { return size; }
  // std::out_of_range for i outside 0 .. count-1.
  RecallSequence sequence(std::int64_t i) const;
  void append_labels(std::int64_t i, std::vector<std::uint8_t>& out) const;
};

// The split `split` of a sweep (or run) seeded `seed`: `count` sequences of `task`.
RecallSet recall_set(const RecallTask& task, std::uint64_t seed, RecallSplit split, std::int64_t count);

// A split's sequences as files any tool can read (recall_spec.md, "The test set on disk"): keys.npy, values.npy
// and labels.npy, each int32 (count, 2N) in C order (the RecallSequence fields, -1 where a token has no value or
// no label), and manifest.json naming the task, the split's seed (a decimal string: 64 bits) and the count. As (file name, bytes), in that
// order: the bytes are a function of the set alone, so regenerating a set gives the same files.
std::vector<std::pair<std::string, std::string>> recall_set_files(const RecallSet& set);
// Writes them into `dir` (created if needed; each file atomically, the manifest last).
void write_recall_set(const RecallSet& set, const std::filesystem::path& dir);

}  // namespace attnlab
