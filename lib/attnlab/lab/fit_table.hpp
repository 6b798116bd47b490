// The columns a fitted power law takes in a table, so the report draws the very line a verdict was
// judged on (issue 13 item 5): one fit, computed once in C++, read by the judge's note and the figure.
#pragma once

#include <vector>

#include "attnlab/io/csv_table.hpp"
#include "attnlab/lab/statistics.hpp"

namespace attnlab {

// `keys` (what the fit is of: a method, a sweep, a quantity), then points, x_min, x_max (the fitted
// points' range of x), slope, lower95, upper95 (its 95% Student-t interval), intercept (natural log:
// y = exp(intercept) x^slope), r2.
std::vector<Column> fit_columns(std::vector<Column> keys = {});

// The cells of `fit` in fit_columns()'s order. Throws std::invalid_argument for a fit at a confidence
// other than 0.95 (the columns say 95).
std::vector<Cell> fit_cells(const PowerLawFit& fit);

// `keys` followed by fit_cells(fit): one row of a fits table.
std::vector<Cell> fit_row(std::vector<Cell> keys, const PowerLawFit& fit);

}  // namespace attnlab
