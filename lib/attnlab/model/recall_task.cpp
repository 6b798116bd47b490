// The recall task's sequences (recall_task.hpp, recall_spec.md).
#include "attnlab/model/recall_task.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "attnlab/core/rng.hpp"
#include "attnlab/io/atomic_file.hpp"
#include "attnlab/io/npy.hpp"

namespace attnlab {

std::string recall_task_problem(const RecallTask& t) {
  if (t.pairs < 1 || t.pairs > kRecallMaxPairs)
    return fmt::format("pairs (= {}) must be in 1..{}", t.pairs, kRecallMaxPairs);
  if (t.keys < t.pairs || t.keys > kRecallMaxKeys)
    return fmt::format("keys (= {}) must be in pairs (= {})..{}: a sequence's keys are distinct", t.keys, t.pairs, kRecallMaxKeys);
  if (t.values < 1 || t.values > kRecallMaxValues)
    return fmt::format("values (= {}) must be in 1..{} (a value is a label byte)", t.values, kRecallMaxValues);
  return {};
}

RecallSequence recall_sequence(const RecallTask& task, std::uint64_t seed) {
  if (const std::string problem = recall_task_problem(task); !problem.empty())
    throw std::invalid_argument("recall_sequence: " + problem);
  const auto N = static_cast<std::size_t>(task.pairs);
  Rng rng(seed);
  // 1. N distinct keys, each uniform over the vocabulary (a repeat is drawn again).
  std::vector<std::int32_t> keys(N), values(N);
  for (std::size_t j = 0; j < N; ++j) {
    std::int32_t k;
    do {
      k = static_cast<std::int32_t>(rng.uniform() * static_cast<double>(task.keys));
    } while (std::find(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(j), k) != keys.begin() + static_cast<std::ptrdiff_t>(j));
    keys[j] = k;
  }
  // 2. The values, independent and uniform.
  for (auto& v : values) v = static_cast<std::int32_t>(rng.uniform() * static_cast<double>(task.values));
  // 3. The positions: pair j's context token at pi[j], its query at pi[N + j].
  const std::vector<std::int64_t> pi = shuffled_indices(static_cast<std::int64_t>(2 * N), rng);
  RecallSequence s;
  s.key.assign(2 * N, 0);
  s.value.assign(2 * N, -1);
  s.label.assign(2 * N, -1);
  for (std::size_t j = 0; j < N; ++j) {
    const auto context = static_cast<std::size_t>(pi[j]), query = static_cast<std::size_t>(pi[N + j]);
    s.key[context] = keys[j];
    s.value[context] = values[j];
    s.key[query] = keys[j];
    s.label[query] = values[j];
  }
  return s;
}

std::uint64_t recall_split_seed(std::uint64_t seed, RecallSplit split) {
  // Salts of their own (the ViT's derived seeds use 1 for the shuffle, 5 for samples, 1000 + l for layers).
  switch (split) {
    case RecallSplit::train: return derive_seed(seed, 201);
    case RecallSplit::validation: return derive_seed(seed, 202);
    case RecallSplit::test: return derive_seed(seed, 203);
  }
  throw std::logic_error("recall_split_seed: unknown split");
}

RecallSequence RecallSet::sequence(std::int64_t i) const {
  if (i < 0 || i >= size)
    throw std::out_of_range("recall sequence " + std::to_string(i) + " outside 0.." + std::to_string(size - 1));
  return recall_sequence(task, derive_seed(seed, static_cast<std::uint64_t>(i)));
}

void RecallSet::append_labels(std::int64_t i, std::vector<std::uint8_t>& out) const {
  for (const std::int32_t label : sequence(i).label)
    if (label >= 0) out.push_back(static_cast<std::uint8_t>(label));
}

RecallSet recall_set(const RecallTask& task, std::uint64_t seed, RecallSplit split, std::int64_t count) {
  if (const std::string problem = recall_task_problem(task); !problem.empty())
    throw std::invalid_argument("recall_set: " + problem);
  if (count < 0) throw std::invalid_argument("recall_set: count (= " + std::to_string(count) + ") is negative");
  return {task, recall_split_seed(seed, split), count};
}

std::vector<std::pair<std::string, std::string>> recall_set_files(const RecallSet& set) {
  const auto n = static_cast<std::size_t>(set.task.length()), count = static_cast<std::size_t>(set.count());
  NpyArray keys{{count, n}, NpyDtype::int32, {}}, values = keys, labels = keys;
  for (std::int64_t i = 0; i < set.count(); ++i) {
    const RecallSequence s = set.sequence(i);
    keys.values.insert(keys.values.end(), s.key.begin(), s.key.end());
    values.values.insert(values.values.end(), s.value.begin(), s.value.end());
    labels.values.insert(labels.values.end(), s.label.begin(), s.label.end());
  }
  const std::string manifest = fmt::format(
      "{{\n  \"format\": \"attnlab-recall-set\",\n  \"version\": 1,\n  \"pairs\": {},\n  \"keys\": {},\n  \"values\": {},\n"
      "  \"sequences\": {},\n  \"seed\": \"{}\",\n  \"files\": [\"keys.npy\", \"values.npy\", \"labels.npy\"]\n}}\n",
      set.task.pairs, set.task.keys, set.task.values, set.count(), set.seed);
  return {{"keys.npy", format_npy(keys)}, {"values.npy", format_npy(values)}, {"labels.npy", format_npy(labels)},
          {"manifest.json", manifest}};
}

void write_recall_set(const RecallSet& set, const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  ensure_writable_directory(dir);
  for (const auto& [name, bytes] : recall_set_files(set)) write_file_atomically(dir / name, bytes);
}

}  // namespace attnlab
