// Checks of the statistics against known values.
#include <doctest/doctest.h>

#include <cmath>

#include "attnlab/core/rng.hpp"
#include "attnlab/io/table_reader.hpp"
#include "attnlab/lab/fit_table.hpp"
#include "attnlab/lab/mean_bands.hpp"
#include "attnlab/lab/mean_interval.hpp"
#include "attnlab/lab/statistics.hpp"
#include "attnlab/lab/verdict.hpp"
#include "support.hpp"

using namespace attnlab;

TEST_CASE("Clopper-Pearson intervals match published values") {
  // 0 of 10: upper = 1 - 0.025^(1/10) exactly.
  const Interval zero = clopper_pearson(0, 10);
  CHECK(zero.lower == 0.0);
  CHECK(zero.upper == doctest::Approx(1 - std::pow(0.025, 0.1)).epsilon(1e-12));
  // 5 of 10 (e.g. R's binom.test): [0.1870860, 0.8129140].
  const Interval half = clopper_pearson(5, 10);
  CHECK(half.lower == doctest::Approx(0.1870860).epsilon(1e-6));
  CHECK(half.upper == doctest::Approx(0.8129140).epsilon(1e-6));
  // n of n: lower = 0.025^(1/n).
  const Interval all = clopper_pearson(20, 20);
  CHECK(all.upper == 1.0);
  CHECK(all.lower == doctest::Approx(std::pow(0.025, 1.0 / 20)).epsilon(1e-12));
  CHECK_THROWS_AS(clopper_pearson(3, 2), std::invalid_argument);
  CHECK_THROWS_AS(clopper_pearson(0, 0), std::invalid_argument);
}

TEST_CASE("power-law fits recover exact exponents and cover the true one under noise") {
  const PowerLawFit exact = fit_power_law({1, 2, 4, 8}, {3, 12, 48, 192});
  CHECK(exact.slope == doctest::Approx(2.0).epsilon(1e-12));
  CHECK(std::exp(exact.intercept) == doctest::Approx(3.0).epsilon(1e-12));
  CHECK(exact.slope_interval.upper - exact.slope_interval.lower < 1e-9);

  // Multiplicative noise: the 95% interval covers the true slope in about 95% of fits.
  Rng rng(attnlab::testing::test_seed(99));
  int covered = 0;
  constexpr int fits = 400;
  for (int f = 0; f < fits; ++f) {
    std::vector<double> x, y;
    for (double v = 1; v <= 1024; v *= 2) {
      x.push_back(v);
      y.push_back(std::pow(v, 1.5) * std::exp(0.2 * rng.normal()));
    }
    const PowerLawFit fit = fit_power_law(x, y);
    covered += fit.slope_interval.lower <= 1.5 && 1.5 <= fit.slope_interval.upper;
  }
  // Binomial(400, 0.95): mean 380, sd 4.4; 360 is 4.6 sd below.
  CHECK(covered >= 360);
  CHECK_THROWS_AS(fit_power_law({1, 2}, {1, 2}), std::invalid_argument);
  CHECK_THROWS_AS(fit_power_law({1, 2, 3}, {1, 0, 2}), std::invalid_argument);
  CHECK_THROWS_AS(fit_power_law({2, 2, 2}, {1, 2, 3}), std::invalid_argument);
}

TEST_CASE("a fit's table row: its x range, slope, interval and intercept, in fit_columns' order") {
  // Unsorted x: the range is the fitted points' min and max of x itself, not of log x.
  const PowerLawFit fit = fit_power_law({8, 1, 4, 2}, {192, 3, 48, 12.5});
  CHECK(fit.x_min == 1);
  CHECK(fit.x_max == 8);
  const std::vector<Column> columns = fit_columns({text_col("method")});
  std::vector<std::string> names;
  for (const Column& c : columns) names.push_back(c.name);
  CHECK(names == std::vector<std::string>{"method", "points", "x_min", "x_max", "slope", "lower95", "upper95", "intercept", "r2"});
  const std::vector<Cell> row = fit_row({"exact"}, fit);
  REQUIRE(row.size() == columns.size());
  CHECK(std::get<std::int64_t>(row[1].value()) == 4);
  CHECK(std::get<double>(row[4].value()) == fit.slope);
  CHECK(std::get<double>(row[5].value()) == fit.slope_interval.lower);
  CHECK(std::get<double>(row[6].value()) == fit.slope_interval.upper);
  CHECK(std::get<double>(row[7].value()) == fit.intercept);
  CsvTable table(columns);
  table.add_row(row);  // the types agree with the columns
  // Columns named 95 hold only a 95% interval.
  CHECK_THROWS_AS(fit_cells(fit_power_law({1, 2, 4}, {1, 4, 17}, 0.9)), std::invalid_argument);
}

TEST_CASE("mean bands: one row per key and x in first-seen order, mean and Student-t interval of its replicates") {
  attnlab::testing::ScratchDir dir;
  // Seed-major like the experiments' curves; method b has one seed only, at x = 2 a value that is not a number.
  CsvTable t({int_col("seed"), text_col("method"), int_col("x"), real_col("loss", true)});
  for (int seed = 0; seed < 3; ++seed)
    for (int x : {2, 1}) t.add_row({seed, std::string("a"), x, 1.0 + seed + 0.5 * x});
  t.add_row({0, std::string("b"), 1, 0.25});
  t.write(dir.path() / "curves.csv");
  const TableReader curves(dir.path() / "curves.csv");
  const CsvTable bands = mean_band_table(curves, {text_col("method")}, int_col("x"), "loss", "seeds");
  CHECK(bands.header_line() == "method,x,seeds,loss_mean,lower95,upper95");
  REQUIRE(bands.row_count() == 3);
  bands.write(dir.path() / "bands.csv");
  const TableReader b(dir.path() / "bands.csv");
  CHECK(b.text(0, "method") == "a");
  CHECK(b.integer(0, "x") == 2);  // first seen, not sorted
  CHECK(b.integer(1, "x") == 1);
  CHECK(b.text(2, "method") == "b");
  // a at x = 2: 2, 3, 4 -> mean 3, s = 1, half-width t(0.975, 2) / sqrt(3). Two degrees of freedom have a closed
  // form, t(p, 2) = (2p - 1) / sqrt(2 p (1 - p)) = 4.30265272974946 (SciPy 1.10's t.ppf is 4e-11 off it).
  const double p = 0.975, half = (2 * p - 1) / std::sqrt(2 * p * (1 - p)) / std::sqrt(3.0);
  CHECK(b.integer(0, "seeds") == 3);
  CHECK(b.real(0, "loss_mean") == doctest::Approx(3.0).epsilon(1e-15));
  CHECK(b.real(0, "lower95") == doctest::Approx(3.0 - half).epsilon(1e-12));
  CHECK(b.real(0, "upper95") == doctest::Approx(3.0 + half).epsilon(1e-12));
  const MeanInterval direct = student_t_mean_interval({1.5, 2.5, 3.5});
  CHECK(b.real(1, "lower95") == direct.interval.lower);  // the judges' interval, bit for bit
  CHECK(b.real(1, "upper95") == direct.interval.upper);
  // One replicate: no spread, the band is the mean itself.
  CHECK(b.integer(2, "seeds") == 1);
  CHECK(b.real(2, "lower95") == 0.25);
  CHECK(b.real(2, "upper95") == 0.25);
  // A non-finite value is reported, not written as a band.
  t.add_row({1, std::string("b"), 1, std::nan("")});
  t.write(dir.path() / "curves.csv");
  CHECK_THROWS_AS(mean_band_table(TableReader(dir.path() / "curves.csv"), {text_col("method")}, int_col("x"), "loss", "seeds"),
                  NonFiniteError);
  // A column the table lacks is named.
  CHECK_THROWS_WITH_AS(mean_band_table(curves, {text_col("arm")}, int_col("x"), "loss", "seeds"),
                       doctest::Contains("arm"), TableReadError);
}

TEST_CASE("medians of odd and even counts") {
  CHECK(median({3, 1, 2}) == 2);
  CHECK(median({4, 1, 3, 2}) == 2.5);
  CHECK(median({7}) == 7);
  CHECK_THROWS_AS(median({}), std::invalid_argument);
}

TEST_CASE("verdicts by condition: all, some or none within the threshold") {
  WorstByCondition all;
  all.add("a", "case a", 1);
  all.add("b", "case b", 2);
  CHECK(judge_by_condition(all, 30).verdict == Verdict::holds);
  CHECK(judge_by_condition(all, 30).observed == 2);

  WorstByCondition some = all;
  some.add("b", "case b", 1e10);
  const Judgement j = judge_by_condition(some, 30);
  CHECK(j.verdict == Verdict::conditional);
  CHECK(j.note == "holds only for case a. Fails for case b.");
  CHECK(j.observed == 1e10);

  WorstByCondition none;
  none.add("a", "case a", std::nan(""));
  CHECK(judge_by_condition(none, 30).verdict == Verdict::fails);
  CHECK_THROWS_AS(judge_by_condition(WorstByCondition{}, 30), std::invalid_argument);
}
