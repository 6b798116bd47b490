// The columns a fitted power law takes in a table.
#include "attnlab/lab/fit_table.hpp"

#include <fmt/format.h>
#include <stdexcept>

namespace attnlab {

std::vector<Column> fit_columns(std::vector<Column> keys) {
  keys.push_back(int_col("points"));
  for (const char* name : {"x_min", "x_max", "slope", "lower95", "upper95", "intercept", "r2"}) keys.push_back(real_col(name));
  return keys;
}

std::vector<Cell> fit_cells(const PowerLawFit& fit) {
  if (fit.confidence != 0.95)
    throw std::invalid_argument(fmt::format("fit_cells: a fit at confidence {} in columns named lower95/upper95", fit.confidence));
  return {fit.points, fit.x_min, fit.x_max, fit.slope, fit.slope_interval.lower, fit.slope_interval.upper, fit.intercept,
          fit.r_squared};
}

std::vector<Cell> fit_row(std::vector<Cell> keys, const PowerLawFit& fit) {
  for (Cell& c : fit_cells(fit)) keys.push_back(std::move(c));
  return keys;
}

}  // namespace attnlab
