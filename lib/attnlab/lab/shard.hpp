// A share of an experiment's sweeps (issue 16): shard I of N runs a contiguous block of each sweep's
// configurations, so the shards' rows concatenated in shard order are the whole sweep's rows in order.
// A configuration's seed comes from the base seed and its index in the sweep, never from the shard, so
// the rows a shard writes are the rows the unsharded run writes for the same configurations.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attnlab {

class Shard {
 public:
  // The whole sweep: shard 1 of 1.
  Shard() = default;
  // Shard `index` (1-based, as on the command line) of `count`; throws std::invalid_argument unless
  // 1 <= index <= count.
  Shard(int index, int count);
  // Parses "I/N" (decimal, 1 <= I <= N <= 100000); throws std::invalid_argument naming the text.
  static Shard parse(std::string_view text);

  int index() const { return index_; }
  int count() const { return count_; }
  bool whole() const { return count_ == 1; }
  std::string label() const;  // "2/3"

  // The configurations [begin, end) of a sweep of `size` this shard runs: block I of N is
  // [floor((I-1) size / N), floor(I size / N)). With N > size some blocks are empty.
  struct Range {
    std::size_t begin = 0, end = 0;
    std::size_t size() const { return end - begin; }
  };
  // Each call records `size` (sweep_sizes()): the stamp carries the sweep sizes, so the merge can check
  // that every shard enumerated the same sweeps.
  Range range(std::size_t size) const;
  // A sweep whose configurations cost unequal amounts (training runs of different methods, say): a
  // contiguous block of about 1/N of the total cost. Configuration j, whose cost spans [C_j, C_j + c_j)
  // of the total C, goes to the block its midpoint falls in: block floor(N (C_j + c_j / 2) / C) + 1.
  // Midpoints increase with j, so the blocks are contiguous and in order, and a configuration is never
  // split; each block's cost is within one configuration's cost of C / N. Only the cut depends on the
  // costs: a configuration's seed still comes from its index. Costs are any positive finite numbers in
  // one unit (counted FLOPs, say), computed the same way by every shard; std::invalid_argument naming
  // the first that is not. Recorded in sweep_sizes() like range(size).
  Range range(std::span<const double> costs) const;
  const std::vector<std::size_t>& sweep_sizes() const { return sizes_; }

  // For a sweep that must run whole in one process (timings fitted together must come from one
  // machine): whether this shard runs sweep number `ordinal` (0, 1, ... in the experiment's order)
  // entirely. Sweep k goes to shard (k mod N) + 1, spreading an experiment's timing sweeps over shards.
  bool runs_whole(std::size_t ordinal) const;

 private:
  int index_ = 1, count_ = 1;
  mutable std::vector<std::size_t> sizes_;
};

}  // namespace attnlab
