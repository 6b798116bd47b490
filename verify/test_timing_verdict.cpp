// Checks of the timing verdicts' pieces (lab/median_interval, lab/interleaved_timing, lab/timed_medians,
// lab/timing_verdict) on planted data: known order-statistic intervals, the round-robin order, and each rule
// made to hold, fail, be inconclusive and tie. No check here times anything that it then judges.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "attnlab/core/rng.hpp"
#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/table_reader.hpp"
#include "attnlab/lab/interleaved_timing.hpp"
#include "attnlab/lab/median_interval.hpp"
#include "attnlab/lab/statistics.hpp"
#include "attnlab/lab/timed_medians.hpp"
#include "attnlab/lab/timing_verdict.hpp"
#include "attnlab/lab/verdict.hpp"
#include "support.hpp"

using namespace attnlab;

namespace {

constexpr double kUnbounded = std::numeric_limits<double>::infinity();
const double kNotANumber = std::numeric_limits<double>::quiet_NaN();

// Nine planted runs whose CPU times lie around `median` (spread, 2 spread ... 4 spread of it either way, shuffled),
// each waiting as long again for a CPU (its wall time twice its CPU time).
std::vector<TimedRun> nine_runs(double median, double spread) {
  std::vector<TimedRun> v;
  for (int i : {3, -4, 0, 1, -1, 4, -2, 2, -3}) v.push_back({median * (1 + spread * i), 2 * median * (1 + spread * i)});
  return v;
}

}  // namespace

TEST_CASE("median_interval: the order statistics whose binomial coverage reaches 95%") {
  // 9 values: [x_(2), x_(8)], coverage 1 - 2 (1 + 9) / 512.
  const MedianInterval m9 = median_interval({9, 1, 8, 2, 7, 3, 6, 4, 5});
  CHECK(m9.median == 5);
  CHECK(m9.count == 9);
  CHECK(m9.lower_rank == 2);
  CHECK(m9.upper_rank == 8);
  CHECK(m9.interval.lower == 2);
  CHECK(m9.interval.upper == 8);
  CHECK(m9.coverage == doctest::Approx(1 - 2.0 * 10 / 512).epsilon(1e-12));
  // 6 values, the fewest: [min, max], coverage 1 - 2^-5; an even count's median is the middle pair's mean.
  const MedianInterval m6 = median_interval({6, 1, 5, 2, 4, 3});
  CHECK(m6.median == 3.5);
  CHECK(m6.lower_rank == 1);
  CHECK(m6.upper_rank == 6);
  CHECK(m6.coverage == doctest::Approx(1 - 1.0 / 32).epsilon(1e-12));
  // 20 values: [x_(6), x_(15)] (the textbook table's pair), coverage 1 - 2 * 21700 / 2^20.
  std::vector<double> twenty;
  for (int i = 20; i >= 1; --i) twenty.push_back(i);
  const MedianInterval m20 = median_interval(twenty);
  CHECK(m20.lower_rank == 6);
  CHECK(m20.upper_rank == 15);
  CHECK(m20.interval.lower == 6);
  CHECK(m20.interval.upper == 15);
  CHECK(m20.coverage == doctest::Approx(1 - 2.0 * 21700 / 1048576).epsilon(1e-12));
  // 100 values: [x_(40), x_(61)] (P(B <= 39) = 0.0176; l = 41 would reach only 0.943).
  std::vector<double> hundred;
  for (int i = 1; i <= 100; ++i) hundred.push_back(i);
  const MedianInterval m100 = median_interval(hundred);
  CHECK(m100.lower_rank == 40);
  CHECK(m100.upper_rank == 61);
  CHECK(m100.coverage >= 0.95);
  CHECK(min_median_interval_count(0.95) == 6);
  CHECK(min_median_interval_count(0.99) == 8);  // 1 - 2^-7 = 0.992; 7 values reach 0.984
  CHECK_THROWS_AS(median_interval({1, 2, 3, 4, 5}), std::invalid_argument);  // 5 values: 0.9375 at best
  CHECK_THROWS_AS(median_interval({1, 2, 3, 4, 5, kNotANumber}), std::invalid_argument);
  CHECK_THROWS_AS(median_interval({1, 2, 3, 4, 5, kUnbounded}), std::invalid_argument);
  CHECK_THROWS_AS(median_interval({1, 2, 3, 4, 5, 6}, 1.0), std::invalid_argument);
}

TEST_CASE("median_interval covers the median of a skewed, heavy-tailed distribution at least 95% of the time") {
  // Runs slowed now and then, as on a shared machine: lognormal around 1 (median 1), a third of them 1.5-3x.
  // The population median is found by the simulation's own large sample, not assumed.
  Rng rng(attnlab::testing::test_seed(2049));
  const auto draw = [&] {
    const double t = std::exp(0.1 * rng.normal());
    return rng.uniform() < 1.0 / 3 ? t * (1.5 + 1.5 * rng.uniform()) : t;
  };
  std::vector<double> big;
  for (int i = 0; i < 200001; ++i) big.push_back(draw());
  const double truth = median(big);
  int covered = 0;
  constexpr int trials = 2000;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> runs;
    for (int r = 0; r < kTimedRounds; ++r) runs.push_back(draw());
    const MedianInterval m = median_interval(runs);
    covered += m.interval.lower <= truth && truth <= m.interval.upper;
  }
  // Binomial(2000, 0.961): mean 1922, sd 8.7; 1890 is 3.7 sd below.
  CHECK(covered >= 1890);
}

TEST_CASE("time_interleaved: a warm-up round, then rounds of A B C in order, each run's CPU and wall time") {
  std::string order;
  const std::vector<std::function<void()>> works = {[&] { order += 'A'; }, [&] { order += 'B'; }, [&] { order += 'C'; }};
  const auto runs = time_interleaved(works, 3);
  CHECK(order == "ABC" "ABCABCABC");
  REQUIRE(runs.size() == 3);
  for (const auto& r : runs) {
    CHECK(r.size() == 3);
    for (const TimedRun& t : r) {
      CHECK(t.cpu_seconds >= 0);
      CHECK(t.wall_seconds >= 0);
    }
  }
  order.clear();
  CHECK(time_interleaved(works, 2, false).at(1).size() == 2);
  CHECK(order == "ABCABC");  // no warm-up
  CHECK_THROWS_AS(time_interleaved({}, 3), std::invalid_argument);
  CHECK_THROWS_AS(time_interleaved(works, 0), std::invalid_argument);
}

TEST_CASE("time_interleaved: waiting costs wall time and no CPU time, computing costs both") {
  // A run that sleeps 20 ms waits as a run queued behind other processes does: its wall time counts the wait, its
  // CPU time does not. A run that computes is charged its CPU time (at most its wall time plus the clocks' ticks).
  volatile double sink = 0;
  const std::vector<std::function<void()>> works = {
      [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); },
      [&] {
        double s = 0;
        for (int i = 0; i < 2000000; ++i) s += 1.0 / (1.0 + i);
        sink = s;
      }};
  const auto runs = time_interleaved(works, 2, false);
  for (const TimedRun& t : runs[0]) {
    CHECK(t.wall_seconds >= 0.02);
    CHECK(t.cpu_seconds < 0.005);
  }
  for (const TimedRun& t : runs[1]) {
    CHECK(t.cpu_seconds > 0);
    CHECK(t.cpu_seconds <= t.wall_seconds + 1e-3);
  }
}

TEST_CASE("timed runs: one row per run, read back as medians with their intervals") {
  attnlab::testing::ScratchDir dir;
  const std::vector<Column> keys = {text_col("method"), int_col("n")};
  CsvTable runs(timed_run_columns(keys));
  std::vector<std::string> names;
  for (const Column& c : runs.columns()) names.push_back(c.name);
  CHECK(names == std::vector<std::string>{"method", "n", "round", "cpu_seconds", "wall_seconds"});
  add_timed_runs(runs, {"fast", 64}, nine_runs(1.0, 0.01));
  add_timed_runs(runs, {"slow", 64}, nine_runs(2.0, 0.01));
  add_timed_runs(runs, {"fast", 128}, nine_runs(4.0, 0.01));
  CHECK(runs.row_count() == 27);
  runs.write(dir.path() / "t_timing.csv");
  const TimedMedians m(TableReader(dir.path() / "t_timing.csv"), keys);
  REQUIRE(m.size() == 3);  // first-seen order
  CHECK(m.text(0, "method") == "fast");
  CHECK(m.integer(2, "n") == 128);
  CHECK(m.time(1).median == 2.0);
  CHECK(m.time(1).interval.lower == doctest::Approx(2.0 * 0.97));
  CHECK(m.time(1).interval.upper == doctest::Approx(2.0 * 1.03));
  CHECK(m.median_wall_seconds(1) == 4.0);
  CHECK(m.where({{"method", "fast"}}) == std::vector<std::size_t>{0, 2});
  CHECK(m.where({{"method", "fast"}, {"n", "128"}}) == std::vector<std::size_t>{2});
  const CsvTable table = m.table();
  names.clear();
  for (const Column& c : table.columns()) names.push_back(c.name);
  CHECK(names == std::vector<std::string>{"method", "n", "repeats", "median_cpu_seconds", "lower95", "upper95", "median_wall_seconds"});
  CHECK(table.row_count() == 3);

  // Five runs of a configuration give no 95% interval: the judge refuses the table, naming it.
  CsvTable short_runs(timed_run_columns(keys));
  add_timed_runs(short_runs, {"fast", 64}, {{1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}});
  short_runs.write(dir.path() / "short_timing.csv");
  try {
    TimedMedians(TableReader(dir.path() / "short_timing.csv"), keys);
    FAIL("five runs accepted");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("short_timing.csv: method fast, n 64") != std::string::npos);
  }
}

TEST_CASE("margins: in half-widths of the interval on the line's side, beyond 1 decided") {
  const Estimate e{1.0, 0.8, 1.5};
  CHECK(margin_below(e, 2.0) == doctest::Approx(2.0));    // (2 - 1) / (1.5 - 1)
  CHECK(margin_below(e, 1.5) == doctest::Approx(1.0));    // touches: at or below
  CHECK(margin_below(e, 1.25) == doctest::Approx(0.5));   // contains the line
  CHECK(margin_below(e, 0.9) == doctest::Approx(-0.5));   // (1 - 0.9) / (1 - 0.8), other side
  CHECK(margin_below(e, 0.5) == doctest::Approx(-2.5));   // wholly above the line
  CHECK(margin_above(e, 0.5) == doctest::Approx(2.5));
  CHECK(margin_above(e, 1.25) == doctest::Approx(-0.5));
  CHECK(margin_below(exact_estimate(1.0), 2.0) == kUnbounded);  // a counted value has no interval
  CHECK(margin_below(exact_estimate(1.0), 1.0) == 1.0);
  CHECK(std::isnan(margin_below({kNotANumber, 0, 1}, 2.0)));
  CHECK(margin_text(2.0) == "+2.00");
  CHECK(margin_text(-0.474) == "-0.47");
  CHECK(margin_text(kUnbounded) == "+inf");
}

TEST_CASE("a band around a claimed exponent: holds, fails, or inconclusive where the interval contains an edge") {
  // The claim: exponent 1 within 0.2.
  const BandJudgement inside = judge_band({1.02, 0.95, 1.09}, 0.8, 1.2);
  CHECK(inside.outcome == Verdict::holds);
  CHECK(inside.margin >= 1);
  CHECK(inside.margin == doctest::Approx((1.2 - 1.02) / (1.09 - 1.02)));
  const BandJudgement below = judge_band({0.26, 0.1, 0.4}, 0.8, 1.2);
  CHECK(below.outcome == Verdict::fails);
  CHECK(below.margin < -1);
  const BandJudgement straddles = judge_band({1.15, 1.05, 1.3}, 0.8, 1.2);
  CHECK(straddles.outcome == Verdict::inconclusive);
  CHECK(std::abs(straddles.margin) < 1);
  // The same estimate whose point is over the line but whose interval reaches back across it.
  CHECK(judge_band({1.25, 1.1, 1.4}, 0.8, 1.2).outcome == Verdict::inconclusive);
  // One-sided, as R7 and R8 judge: at or below 1.3.
  CHECK(judge_band({1.08, 1.05, 1.10}, -kUnbounded, 1.3).outcome == Verdict::holds);
  CHECK(judge_band({3.0, 2.58, 3.42}, -kUnbounded, 1.3).outcome == Verdict::fails);
  CHECK(judge_band({0.84, 0.64, 1.04}, -kUnbounded, 1.3).outcome == Verdict::holds);
  CHECK(judge_band({1.2, 0.9, 1.5}, -kUnbounded, 1.3).outcome == Verdict::inconclusive);
  CHECK(judge_band({kNotANumber, kNotANumber, kNotANumber}, 0.8, 1.2).outcome == Verdict::inconclusive);  // NaN never holds
  CHECK_THROWS_AS(judge_band({1, 1, 1}, 2, 1), std::invalid_argument);
}

TEST_CASE("separation: decided only where one interval lies strictly below the other, touching is a tie") {
  const Estimate a{1.0, 0.9, 1.1}, b{1.5, 1.3, 1.7}, c{1.2, 1.1, 1.4};
  CHECK(separation_margin(a, b) == doctest::Approx(0.5 / 0.3));  // separated: > 1
  CHECK(separation_margin(b, a) == doctest::Approx(-0.5 / 0.3));
  CHECK(separation_margin(a, c) == doctest::Approx(1.0));  // a.upper == c.lower: touching, not separated
  CHECK(separation_margin(exact_estimate(1), exact_estimate(1)) == 0);
  const Estimate r = ratio_estimate(a, b);
  CHECK(r.value == doctest::Approx(1.0 / 1.5));
  CHECK(r.lower == doctest::Approx(0.9 / 1.7));
  CHECK(r.upper == doctest::Approx(1.1 / 1.3));
  CHECK(r.upper < 1);  // a faster: its interval below b's
  CHECK(ratio_estimate(a, c).upper == doctest::Approx(1.0));  // touching: the ratio's interval reaches 1
  CHECK_THROWS_AS(ratio_estimate(a, {0, 0, 1}), std::invalid_argument);
}

TEST_CASE("the fastest of a cell: one candidate decides it, several tie") {
  CHECK(fastest_candidates({{"a", {1.0, 0.9, 1.1}}, {"b", {1.5, 1.3, 1.7}}, {"c", {2, 1.8, 2.2}}}) == std::vector<std::string>{"a"});
  CHECK(fastest_candidates({{"a", {1.0, 0.9, 1.2}}, {"b", {1.2, 1.1, 1.3}}, {"c", {2, 1.8, 2.2}}}) ==
        std::vector<std::string>{"a", "b"});
  CHECK(fastest_candidates({{"a", {1.0, 0.9, 1.1}}, {"b", {1.2, 1.1, 1.3}}}) == std::vector<std::string>{"a", "b"});  // touching
  CHECK_THROWS_AS(fastest_candidates({}), std::invalid_argument);
  CHECK_THROWS_AS(fastest_candidates({{"a", {1.0, 1.1, 0.9}}}), std::invalid_argument);  // reversed
  CHECK_THROWS_AS(fastest_candidates({{"a", {kNotANumber, 0.9, 1.1}}}), std::invalid_argument);
}

TEST_CASE("a group fastest (U15's rule per cell): holds, fails, and a tie is inconclusive") {
  const std::vector<std::string> linear = {"linear-shen", "linear-elu"};
  const auto cell = [](Estimate shen, Estimate elu, Estimate linformer, Estimate exact) {
    return std::vector<NamedEstimate>{{"exact", exact}, {"linear-shen", shen}, {"linear-elu", elu}, {"linformer", linformer}};
  };
  const Estimate slow{5, 4.8, 5.3};
  // Holds: linear-elu's interval lies below every other method's.
  const GroupRace holds = judge_group_fastest(cell({2.0, 1.9, 2.1}, {1.0, 0.95, 1.05}, {1.5, 1.4, 1.6}, slow), linear);
  CHECK(holds.outcome == Verdict::holds);
  CHECK(holds.candidates == std::vector<std::string>{"linear-elu"});
  CHECK(holds.margin > 1);
  CHECK(holds.group_best.value == 1.0);
  CHECK(holds.others_best.lower == 1.4);
  // Holds as well when the two linear forms tie with each other below every other method.
  const GroupRace linear_tie = judge_group_fastest(cell({1.02, 0.97, 1.08}, {1.0, 0.95, 1.05}, {1.5, 1.4, 1.6}, slow), linear);
  CHECK(linear_tie.outcome == Verdict::holds);
  CHECK(linear_tie.candidates == std::vector<std::string>{"linear-shen", "linear-elu"});
  // Fails: Linformer's interval lies below both linear forms'.
  const GroupRace fails = judge_group_fastest(cell({2.0, 1.9, 2.1}, {1.5, 1.45, 1.6}, {1.0, 0.95, 1.05}, slow), linear);
  CHECK(fails.outcome == Verdict::fails);
  CHECK(fails.candidates == std::vector<std::string>{"linformer"});
  CHECK(fails.margin < -1);
  // A tie: Linformer's and linear-elu's intervals overlap; the cell cannot be decided.
  const GroupRace tie = judge_group_fastest(cell({2.0, 1.9, 2.1}, {1.0, 0.95, 1.06}, {1.03, 0.98, 1.1}, slow), linear);
  CHECK(tie.outcome == Verdict::inconclusive);
  CHECK(tie.candidates == std::vector<std::string>{"linear-elu", "linformer"});
  CHECK(std::abs(tie.margin) <= 1);
  // The margin decides exactly where the rule does.
  for (const GroupRace& r : {holds, linear_tie, fails, tie})
    CHECK((r.outcome == Verdict::holds) == (r.margin > 1));
  CHECK_THROWS_AS(judge_group_fastest({{"linear-elu", {1, 1, 1}}}, linear), std::invalid_argument);  // no other method
  CHECK_THROWS_AS(judge_group_fastest({{"exact", {1, 1, 1}}}, linear), std::invalid_argument);       // no linear form
}

TEST_CASE("the margin a note quotes is the outcome's that decides the verdict") {
  const TimedOutcome firm{"firm", Verdict::holds, 4.0}, weak{"weak", Verdict::holds, 1.2}, far{"far", Verdict::fails, -5.0},
      near{"near", Verdict::fails, -1.1}, open{"open", Verdict::inconclusive, 0.3}, almost{"almost", Verdict::inconclusive, -0.9};
  // Holds: the weakest holding outcome would change it first.
  CHECK(deciding_outcome({firm, weak}, Verdict::holds).what == "weak");
  // Fails on the ladder (every outcome fails): the failure nearest to -1; with one failure enough (L2), the strongest.
  CHECK(deciding_outcome({far, near}, Verdict::fails).what == "near");
  CHECK(deciding_outcome({firm, far, near, open}, Verdict::fails, true).what == "far");
  // Conditional: the weaker of the strongest holding (4.0) and the strongest failing (-5.0) outcome.
  CHECK(deciding_outcome({firm, weak, far, near, open}, Verdict::conditional).what == "firm");
  CHECK(deciding_outcome({weak, far}, Verdict::conditional).what == "weak");
  // Inconclusive: the undecided outcome nearest to deciding.
  CHECK(deciding_outcome({firm, open, almost}, Verdict::inconclusive).what == "almost");
  CHECK(deciding_outcome({firm, {"nan", Verdict::holds, kNotANumber}}, Verdict::inconclusive).what == "nan");  // NaN decides nothing
  CHECK_THROWS_AS(deciding_outcome({}, Verdict::holds), std::invalid_argument);
  CHECK_THROWS_AS(deciding_outcome({firm}, Verdict::fails), std::invalid_argument);
  CHECK_THROWS_AS(deciding_outcome({firm}, Verdict::conditional), std::invalid_argument);
  const std::string s = margin_sentence(weak);
  CHECK(s.find("Margin: +1.20 half-widths of its 95% interval from the threshold, weak (") == 0);
  CHECK(margin_sentence({"memory (counted)", Verdict::fails, -kUnbounded}).find("counted, not timed") != std::string::npos);
}

TEST_CASE("a statement of timed parts (a corrected timing claim): every part must hold, and an undecided part never flips it") {
  const TimedPart firm{{"firm", Verdict::holds, 4.0}, "firm 0.9 [0.8, 1.0]"}, weak{{"weak", Verdict::holds, 1.2}, "weak"},
      far{{"far", Verdict::fails, -5.0}, "far"}, near{{"near", Verdict::fails, -1.1}, "near"},
      open{{"open", Verdict::inconclusive, 0.3}, "open"}, nan{{"nan", Verdict::holds, kNotANumber}, "nan"};
  const Judgement all = judge_timed_parts({firm, weak});
  CHECK(all.verdict == Verdict::holds);
  CHECK(all.observed == 0);
  CHECK(all.note.find("Parts: firm 0.9 [0.8, 1.0]; weak. ") == 0);
  CHECK(all.note.find("+1.20 half-widths of its 95% interval from the threshold, weak (") != std::string::npos);
  const Judgement none = judge_timed_parts({far, near});
  CHECK(none.verdict == Verdict::fails);
  CHECK(none.observed == 2);
  CHECK(none.note.find(", near (") != std::string::npos);  // the failure nearest to deciding the other way
  const Judgement some = judge_timed_parts({firm, weak, near, open});
  CHECK(some.verdict == Verdict::conditional);  // whatever the undecided part turns out to be
  CHECK(some.observed == 1);
  CHECK(some.note.find("Holds only for firm 0.9 [0.8, 1.0]; weak. Fails for near.") == 0);
  // An undecided part that could change the verdict leaves it inconclusive, never holds or fails.
  CHECK(judge_timed_parts({firm, weak, open}).verdict == Verdict::inconclusive);
  CHECK(judge_timed_parts({far, open}).verdict == Verdict::inconclusive);
  const Judgement undecided = judge_timed_parts({firm, nan});  // a NaN margin decides nothing
  CHECK(undecided.verdict == Verdict::inconclusive);
  CHECK(undecided.note.find(", nan (") != std::string::npos);
  CHECK_THROWS_AS(judge_timed_parts({}), std::invalid_argument);
  CHECK_THROWS_AS(judge_timed_parts({{{"untested", Verdict::untested, 0.0}, "untested"}}), std::invalid_argument);
}

TEST_CASE("bursts of load that hit a round's methods alike widen intervals but never reverse a race") {
  // Planted timings of two methods per cell, true ratio from 0.7 to 1.3, timed round-robin twice: once quiet
  // (a few percent of noise per run), once loaded (each round slowed 1.5-3x with probability 0.2, the same burst
  // for both methods of the round, as interleaving makes it, plus the quiet noise). Over many cells the two runs
  // must never decide opposite ways, and the check must not be vacuous: some cells decided in both runs, some
  // ties in the loaded one.
  Rng rng(attnlab::testing::test_seed(4049));
  int opposite = 0, decided_both = 0, loaded_ties = 0;
  for (int cell = 0; cell < 600; ++cell) {
    const double ratio = 0.7 + 0.6 * rng.uniform();
    std::vector<int> outcome;
    for (bool loaded : {false, true}) {
      std::vector<double> a, b;
      for (int r = 0; r < kTimedRounds; ++r) {
        const double burst = loaded && rng.uniform() < 0.2 ? 1.5 + 1.5 * rng.uniform() : 1.0;
        a.push_back(burst * std::exp(0.03 * rng.normal()));
        b.push_back(burst * ratio * std::exp(0.03 * rng.normal()));
      }
      const double m = separation_margin(estimate_of(median_interval(a)), estimate_of(median_interval(b)));
      outcome.push_back(m > 1 ? 1 : m < -1 ? -1 : 0);
    }
    opposite += outcome[0] * outcome[1] < 0;
    decided_both += outcome[0] != 0 && outcome[1] != 0;
    loaded_ties += outcome[1] == 0;
  }
  CHECK(opposite == 0);
  CHECK(decided_both > 100);
  CHECK(loaded_ties > 50);
}
