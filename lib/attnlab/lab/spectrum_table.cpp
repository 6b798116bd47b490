// The tables of attention spectra (spectrum_table.hpp).
#include "attnlab/lab/spectrum_table.hpp"

#include <algorithm>
#include <stdexcept>

#include "attnlab/lab/statistics.hpp"

namespace attnlab::spectrum_table {

Tables::Tables()
    : rank_({text_col(kTask), text_col(kSource), text_col(kKind), int_col(kSeed), int_col(kLayer), int_col(kHead), int_col(kSamples), int_col(kN),
             int_col(kDk), real_col(kMedianRank), real_col("max_rank90"), real_col("median_rank99"), real_col("max_rank99"),
             real_col("median_rank90_over_n"), real_col(kMedianRankCentred), real_col("mean_top1_energy"), int_col(kLinformerK),
             text_col("low_rank")}),
      spectrum_({text_col(kTask), text_col(kSource), int_col(kSeed), int_col(kLayer), int_col(kHead), int_col("index"),
                 real_col("cumulative_energy")}) {}

void Tables::begin_task(const std::string& task, Eigen::Index n, Eigen::Index d_k, Eigen::Index k) {
  task_ = task;
  n_ = n;
  d_k_ = d_k;
  k_ = k;
}

void Tables::add(const std::string& source, const std::string& kind, int seed, Eigen::Index layer, Eigen::Index head,
                 const std::vector<SampleSpectrum>& samples) {
  if (samples.empty()) throw std::invalid_argument("spectrum_table: no samples for " + source);
  std::vector<double> rank, high, centred;
  double top1 = 0;
  Eigen::VectorXd cumulative = Eigen::VectorXd::Zero(samples.front().cumulative.size());
  for (const auto& s : samples) {
    rank.push_back(static_cast<double>(s.rank));
    high.push_back(static_cast<double>(s.rank_high));
    centred.push_back(static_cast<double>(s.rank_centred));
    top1 += s.top1;
    cumulative += s.cumulative;
  }
  const auto count = static_cast<double>(samples.size());
  const double med = median(rank);
  if (task_.empty()) throw std::logic_error("spectrum_table: add() before begin_task()");
  rank_.add_row({task_, source, kind, seed, layer, head, static_cast<std::int64_t>(samples.size()), n_, d_k_, med,
                 *std::max_element(rank.begin(), rank.end()), median(high), *std::max_element(high.begin(), high.end()),
                 med / static_cast<double>(n_), median(centred), top1 / count, k_, med <= static_cast<double>(k_)});
  for (Eigen::Index i = 0; i < cumulative.size(); ++i) spectrum_.add_row({task_, source, seed, layer, head, i + 1, cumulative(i) / count});
}

}  // namespace attnlab::spectrum_table
