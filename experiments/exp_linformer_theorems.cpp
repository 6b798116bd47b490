// U4, U5, U6, U16: Linformer's Theorems 1 and 2 as the UCU report (seed 002) states them, measured.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <string>
#include <vector>

#include "attnlab/lab/attention_inputs.hpp"
#include "attnlab/io/csv_table.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/lab/parallel_trials.hpp"
#include "attnlab/io/ledger.hpp"
#include "attnlab/attention/linformer.hpp"
#include "attnlab/attention/softmax_attention.hpp"
#include "attnlab/lab/statistics.hpp"

using namespace attnlab;

namespace {

const char* kSource = "002_cfe0fd4ab08b70f3.txt";

// Fixed before the run. "1 - o(1)" is read as: a success rate of at least 1 - delta.
constexpr double kDelta = 0.1;
// U5: the error level at which the needed k is tracked against n, and the largest power-law
// exponent of k(n) still read as logarithmic growth (log n over n in [128, 2048] looks like
// n^0.15; k proportional to n gives 1).
constexpr double kU5Epsilon = 0.2;
constexpr double kLogExponentMax = 0.5;
// U6: the bound's k is evaluated only where it is a reduction, k <= n (a "projection" to more
// rows than n saves nothing, and its cost grows with k n).
constexpr double kU6MaxKOverN = 1.0;
// Search grid for the k a success rate needs: k_j = round(2^(j/2)), j = 0 .. kGridSteps.
constexpr int kGridSteps = 60;  // up to 2^30

struct Sweep {
  std::vector<Eigen::Index> n;
  std::vector<double> eps;
  Eigen::Index d;
  int trials;
  std::vector<Eigen::Index> svd_n;  // n for which the SVD reference (O(n^3)) is formed
  // U6
  std::vector<Eigen::Index> u6_n, u6_d, u6_k;
  std::vector<double> u6_eps;
  int u6_trials;
};

Sweep make_sweep(bool quick) {
  if (quick)
    return {{64, 128, 256}, {0.2, 0.5}, 16, 60, {64, 128, 256}, {128, 256}, {4}, {8, 32}, {0.2, 0.5}, 12};
  return {{128, 256, 512, 1024, 2048},
          {0.1, 0.2, 0.3, 0.5},
          64,
          100,
          {128, 256, 512},
          {512, 2048},
          {16, 64},
          {16, 64, 256},
          {0.1, 0.2, 0.5},
          20};
}

Eigen::Index grid_k(int j) { return static_cast<Eigen::Index>(std::llround(std::pow(2.0, j / 2.0))); }

// Theorem 1 as stated: k = 5 log n / (eps^2 - eps^3), natural log.
// At least one row: the formula gives 0 at n = 1 (a given input can be that short).
Eigen::Index theorem1_k(Eigen::Index n, double eps) {
  return std::max<Eigen::Index>(
      1, static_cast<Eigen::Index>(std::ceil(5.0 * std::log(static_cast<double>(n)) / (eps * eps - eps * eps * eps))));
}

// Theorem 2 as stated: k = 9 d log d / eps^2, natural log.
Eigen::Index theorem2_k(Eigen::Index d, double eps) {
  const double dd = static_cast<double>(d);  // at least one row: the formula gives 0 at d = 1
  return std::max<Eigen::Index>(1, static_cast<Eigen::Index>(std::ceil(9.0 * dd * std::log(dd) / (eps * eps))));
}

// One family at one n: P, V and P V, shared by every eps and k.
struct Problem {
  Mat<double> p, v, pv;
};

// Successes of ||P R^T R w - P w|| < eps ||P w|| over `trials` draws of R, w = column (t mod d) of V.
std::size_t theorem1_successes(const Problem& pr, Eigen::Index k, double eps, int trials, std::uint64_t seed) {
  Rng rng(seed);
  const Eigen::Index n = pr.p.rows(), d = pr.v.cols();
  Mat<double> y(n, trials);
  for (int t = 0; t < trials; ++t) y.col(t) = round_trip_sampled(pr.v.col(t % d), k, rng);
  const Mat<double> py = pr.p * y;  // one GEMM for all trials
  std::size_t ok = 0;
  for (int t = 0; t < trials; ++t)
    if ((py.col(t) - pr.pv.col(t % d)).norm() < eps * pr.pv.col(t % d).norm()) ++ok;
  return ok;
}

struct KNeeded {
  Eigen::Index k = -1;  // -1: not reached on the grid
  double rate = 0;
};

// Smallest grid k whose success rate reaches 1 - delta, by bisection on the grid (the rate
// grows with k: R^T R w -> w as k -> infinity).
KNeeded theorem1_k_needed(const Problem& pr, double eps, int trials, std::uint64_t seed) {
  const auto rate = [&](int j) {
    return static_cast<double>(theorem1_successes(pr, grid_k(j), eps, trials, derive_seed(seed, grid_k(j)))) / trials;
  };
  int lo = 0, hi = kGridSteps;
  double hi_rate = rate(hi);
  if (hi_rate < 1 - kDelta) return {};
  if (double r0 = rate(lo); r0 >= 1 - kDelta) return {grid_k(lo), r0};
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    const double r = rate(mid);
    if (r >= 1 - kDelta) {
      hi = mid;
      hi_rate = r;
    } else {
      lo = mid;
    }
  }
  return {grid_k(hi), hi_rate};
}

// Smallest rank r with ||(P - P_r) w|| <= eps ||P w|| for every column w of V (bisection: each
// column's error decreases with r).
Eigen::Index best_rank_needed(const BestRankAttention& best, double eps) {
  Eigen::Index lo = -1, hi = best.n();
  while (hi - lo > 1) {
    const Eigen::Index mid = (lo + hi) / 2;
    if (best.column_errors(mid).maxCoeff() <= eps) hi = mid;
    else lo = mid;
  }
  return hi;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  ExperimentCli cli("exp_linformer_theorems", "U4-U6, U16: Linformer's Theorems 1 and 2 as stated, measured",
                    GivenKind::attention);
  cli.app().footer("With --q --k --v, both theorems are measured on those inputs at their n and d (eps, k and the "
                   "trials still sweep); the table of Theorem 2's k against d needs no inputs and is left out.");
  std::string family;
  cli.app().add_option("--family", family, "restrict to one input family")->check(CLI::IsMember(attention_families()));
  cli.parse(argc, argv);
  return run_experiment(cli.name(), [&] {
    const GivenInputs& given = cli.given();
    Sweep sw = make_sweep(cli.options().quick);
    if (given.used()) {
      // The given n and d replace the shapes.
      sw.n = sw.svd_n = sw.u6_n = {given.matrix("q").rows()};
      sw.d = given.matrix("q").cols();
      sw.u6_d = {sw.d};
    }
    const std::uint64_t seed = cli.options().seed;
    const std::vector<std::string> families =
        given.families_or(family.empty() ? attention_families() : std::vector<std::string>{family});
    const auto nf = static_cast<Eigen::Index>(families.size()), nn = static_cast<Eigen::Index>(sw.n.size()),
               ne = static_cast<Eigen::Index>(sw.eps.size());

    // ---- U4, U5: Theorem 1 ----
    std::vector<Problem> problems(static_cast<std::size_t>(nf * nn));
    parallel_trials(static_cast<std::size_t>(nf * nn), [&](std::size_t trial) {
      const auto i = static_cast<Eigen::Index>(trial);
      Rng rng(derive_seed(seed, static_cast<std::uint64_t>(i)));
      const auto in = given.attention_inputs_of(families[static_cast<std::size_t>(i / nn)], sw.n[static_cast<std::size_t>(i % nn)], sw.d, rng);
      auto& pr = problems[static_cast<std::size_t>(i)];
      pr.p = softmax_attention_matrix(in.q, in.k);
      pr.v = in.v;
      pr.pv = pr.p * pr.v;
    });
    struct T1 {
      std::size_t successes = 0;
      KNeeded needed;
    };
    std::vector<T1> t1(static_cast<std::size_t>(nf * nn * ne));
    parallel_trials(static_cast<std::size_t>(nf * nn * ne), [&](std::size_t trial) {
      const auto i = static_cast<Eigen::Index>(trial);
      const auto& pr = problems[static_cast<std::size_t>(i / ne)];
      const double eps = sw.eps[static_cast<std::size_t>(i % ne)];
      const std::uint64_t s = derive_seed(seed, 1000000 + static_cast<std::uint64_t>(i));
      const Eigen::Index n = pr.p.rows();
      t1[static_cast<std::size_t>(i)].successes = theorem1_successes(pr, theorem1_k(n, eps), eps, sw.trials, derive_seed(s, 0));
      t1[static_cast<std::size_t>(i)].needed = theorem1_k_needed(pr, eps, sw.trials, derive_seed(s, 1));
    });
    // The SVD reference: the smallest rank any P~ truncation needs, at each eps.
    const auto nsvd = static_cast<Eigen::Index>(sw.svd_n.size());
    std::vector<std::vector<Eigen::Index>> svd_rank(static_cast<std::size_t>(nf * nsvd));
    parallel_trials(static_cast<std::size_t>(nf * nsvd), [&](std::size_t trial) {
      const auto i = static_cast<Eigen::Index>(trial);
      const Eigen::Index fi = i / nsvd, n = sw.svd_n[static_cast<std::size_t>(i % nsvd)];
      const auto ni = std::find(sw.n.begin(), sw.n.end(), n) - sw.n.begin();
      Rng rng(derive_seed(seed, static_cast<std::uint64_t>(fi * nn + ni)));  // the same inputs as above
      const auto in = given.attention_inputs_of(families[static_cast<std::size_t>(fi)], n, sw.d, rng);
      const BestRankAttention best(in.q, in.k, in.v);
      if (!(best.reconstruction_ratio() < 30))
        throw std::runtime_error(fmt::format("SVD of P failed its backward-error check (ratio {})", best.reconstruction_ratio()));
      for (double eps : sw.eps) svd_rank[static_cast<std::size_t>(i)].push_back(best_rank_needed(best, eps));
    });

    CsvTable u4({text_col("family"), int_col("n"), int_col("d"), real_col("eps"), int_col("k_stated"),
                 text_col("k_stated_below_n"), int_col("trials"), int_col("successes"), real_col("success_rate"),
                 real_col("ci_low"), real_col("ci_high"), int_col("k_needed"), real_col("k_needed_rate"),
                 int_col("best_rank_needed")});
    double min_rate = 1;
    std::vector<std::string> families_ok, families_bad;
    for (Eigen::Index fi = 0; fi < nf; ++fi) {
      bool family_ok = true;
      for (Eigen::Index ni = 0; ni < nn; ++ni)
        for (Eigen::Index ei = 0; ei < ne; ++ei) {
          const auto& r = t1[static_cast<std::size_t>((fi * nn + ni) * ne + ei)];
          const Eigen::Index n = sw.n[static_cast<std::size_t>(ni)], ks = theorem1_k(n, sw.eps[static_cast<std::size_t>(ei)]);
          const Interval ci = clopper_pearson(r.successes, static_cast<std::size_t>(sw.trials));
          const double rate = static_cast<double>(r.successes) / sw.trials;
          min_rate = std::min(min_rate, rate);
          // A configuration fails when its rate is significantly below 1 - delta.
          if (ci.upper < 1 - kDelta) family_ok = false;
          const auto si = std::find(sw.svd_n.begin(), sw.svd_n.end(), n) - sw.svd_n.begin();
          const Eigen::Index rank = si < nsvd ? svd_rank[static_cast<std::size_t>(fi * nsvd + si)][static_cast<std::size_t>(ei)] : -1;
          u4.add_row({families[static_cast<std::size_t>(fi)], n, sw.d, sw.eps[static_cast<std::size_t>(ei)], ks, ks < n,
                      sw.trials, r.successes, rate, ci.lower, ci.upper, r.needed.k, r.needed.rate, rank});
        }
      (family_ok ? families_ok : families_bad).push_back(families[static_cast<std::size_t>(fi)]);
    }
    cli.write_table(u4, "linformer_theorem1.csv");

    // U5: growth of the needed k with n, per family, at eps = kU5Epsilon.
    const auto e5 = std::find(sw.eps.begin(), sw.eps.end(), kU5Epsilon) - sw.eps.begin();
    CsvTable u5({text_col("family"), text_col("construction"), int_col("points"), text_col("all_reached"),
                 real_col("power_exponent"), real_col("power_exponent_low"), real_col("power_exponent_high"),
                 real_col("power_r2"), real_col("log_slope"), real_col("log_r2"), text_col("better_fit"),
                 text_col("growth")});
    double max_exponent = 0;
    std::vector<std::string> log_ok, log_bad;
    for (Eigen::Index fi = 0; fi < nf; ++fi)
      for (int construction = 0; construction < 2; ++construction) {
        // construction 0: Theorem 1's P R^T R (k needed for a 1 - delta success rate);
        // construction 1: the best rank-r truncation of P (every column of V within eps).
        std::vector<double> x, y, lx;
        bool reached = true;
        const auto& ns = construction == 0 ? sw.n : sw.svd_n;
        for (std::size_t ni = 0; ni < ns.size(); ++ni) {
          const Eigen::Index k = construction == 0
                                     ? t1[static_cast<std::size_t>((fi * nn + static_cast<Eigen::Index>(ni)) * ne + e5)].needed.k
                                     : svd_rank[static_cast<std::size_t>(fi * nsvd + static_cast<Eigen::Index>(ni))][static_cast<std::size_t>(e5)];
          if (k < 1) {
            reached = false;
            continue;
          }
          x.push_back(static_cast<double>(ns[ni]));
          lx.push_back(std::log(static_cast<double>(ns[ni])));
          y.push_back(static_cast<double>(k));
        }
        const std::string name = construction == 0 ? "random_projection" : "best_rank_svd";
        if (x.size() < 3 || *std::max_element(y.begin(), y.end()) == *std::min_element(y.begin(), y.end())) {
          // A constant k (or too few reached points) has no fitted growth: record it as such.
          const bool constant = x.size() >= 3;
          u5.add_row({families[static_cast<std::size_t>(fi)], name, static_cast<long>(x.size()), reached && constant, 0.0, 0.0, 0.0,
                      1.0, 0.0, 1.0, "none", constant && reached ? "constant" : "not_reached"});
          if (construction == 0) (constant && reached ? log_ok : log_bad).push_back(families[static_cast<std::size_t>(fi)]);
          continue;
        }
        const PowerLawFit pw = fit_power_law(x, y);
        const PowerLawFit ln = fit_line(lx, y);
        const std::string growth = !reached                                   ? "not_reached"
                                   : pw.slope_interval.upper < kLogExponentMax ? "logarithmic"
                                   : pw.slope_interval.lower > kLogExponentMax ? "polynomial"
                                                                               : "undecided";
        u5.add_row({families[static_cast<std::size_t>(fi)], name, static_cast<long>(x.size()), reached, pw.slope,
                    pw.slope_interval.lower, pw.slope_interval.upper, pw.r_squared, ln.slope, ln.r_squared,
                    ln.r_squared >= pw.r_squared ? "log_n" : "power_of_n", growth});
        if (construction == 0) {
          max_exponent = std::max(max_exponent, reached ? pw.slope : std::numeric_limits<double>::max());
          (growth == "logarithmic" ? log_ok : log_bad).push_back(families[static_cast<std::size_t>(fi)]);
        }
      }
    cli.write_table(u5, "linformer_rank_growth.csv");

    // ---- U6: Theorem 2 ----
    CsvTable bound({int_col("d"), real_col("eps"), int_col("k_bound"), int_col("smallest_n_with_k_below_n")});
    const std::vector<Eigen::Index> bound_d{16, 32, 64, 128};
    const std::vector<double> bound_eps{0.1, 0.2, 0.5};
    const std::vector<Eigen::Index> practical_n{512, 1024, 2048, 4096, 8192, 16384};
    int below = 0, cells = 0;
    for (Eigen::Index d : bound_d)
      for (double eps : bound_eps) {
        const Eigen::Index kb = theorem2_k(d, eps);
        bound.add_row({d, eps, kb, kb + 1});
        for (Eigen::Index n : practical_n) {
          ++cells;
          if (kb < n) ++below;
        }
      }
    if (!given.used()) cli.write_table(bound, "linformer_theorem2_bound.csv");

    struct U6Config {
      std::size_t family;
      Eigen::Index n, d;
      std::vector<Eigen::Index> ks;       // evaluated k, increasing
      std::vector<double> bound_eps;      // eps whose bound's k is in ks (0 otherwise)
    };
    std::vector<U6Config> configs;
    for (std::size_t fi = 0; fi < families.size(); ++fi)
      for (Eigen::Index n : sw.u6_n)
        for (Eigen::Index d : sw.u6_d) {
          U6Config c{fi, n, d, {}, {}};
          for (Eigen::Index k : sw.u6_k) c.ks.push_back(k), c.bound_eps.push_back(0);
          for (double eps : sw.u6_eps) {
            const Eigen::Index kb = theorem2_k(d, eps);
            if (static_cast<double>(kb) <= kU6MaxKOverN * static_cast<double>(n)) c.ks.push_back(kb), c.bound_eps.push_back(eps);
          }
          configs.push_back(c);
        }
    // Per config and k: successes (one random row per trial) at each eps, and the mean
    // normalised error over all rows and trials.
    struct U6Result {
      std::vector<std::vector<std::size_t>> successes;  // [k][eps]
      std::vector<double> mean_error, row_success;        // [k], row_success at the bound's eps or the largest eps
    };
    std::vector<U6Result> u6r(configs.size());
    parallel_trials(configs.size(), [&](std::size_t ci) {
      const auto& c = configs[ci];
      Rng rng(derive_seed(seed, 2000000 + ci));
      const auto in = given.attention_inputs_of(families[c.family], c.n, c.d, rng);
      const Mat<double> exact = linformer_reference_attention(in.q, in.k, in.v);
      const Vec<double> p_norm = softmax_attention_matrix(in.q, in.k).rowwise().norm();
      // ||V||: the spectral norm, the operator norm a bound on ||softmax(w) V|| uses.
      const double v_norm = std::sqrt(Eigen::SelfAdjointEigenSolver<Mat<double>>(in.v.transpose() * in.v).eigenvalues().maxCoeff());
      const Eigen::Index kmax = *std::max_element(c.ks.begin(), c.ks.end());
      auto& res = u6r[ci];
      res.successes.assign(c.ks.size(), std::vector<std::size_t>(sw.u6_eps.size(), 0));
      res.mean_error.assign(c.ks.size(), 0.0);
      res.row_success.assign(c.ks.size(), 0.0);
      for (int t = 0; t < sw.u6_trials; ++t) {
        // One draw of kmax x n Gaussian rows per trial; the leading k rows rescaled by
        // sqrt(kmax / k) are an N(0, 1/k) draw for every smaller k (nested, as a sweep over k should be).
        const auto full = gaussian_projections(c.n, kmax, ProjectionSharing::separate, rng);
        const auto row = static_cast<Eigen::Index>(rng.uniform() * static_cast<double>(c.n));
        for (std::size_t ki = 0; ki < c.ks.size(); ++ki) {
          const Eigen::Index k = c.ks[ki];
          const double s = std::sqrt(static_cast<double>(kmax) / static_cast<double>(k));
          const LinformerProjections<double> proj{full.e.topRows(k) * s, full.f.topRows(k) * s};
          const Mat<double> out = linformer_attention(in.q, in.k, in.v, proj);
          const Vec<double> err = (out - exact).rowwise().norm().cwiseQuotient(p_norm) / v_norm;
          res.mean_error[ki] += err.mean() / sw.u6_trials;
          const double eps_rows = c.bound_eps[ki] > 0 ? c.bound_eps[ki] : sw.u6_eps.back();
          res.row_success[ki] += (err.array() < eps_rows).cast<double>().mean() / sw.u6_trials;
          for (std::size_t ei = 0; ei < sw.u6_eps.size(); ++ei)
            if (err(row) < sw.u6_eps[ei]) ++res.successes[ki][ei];
        }
      }
    });
    CsvTable u6({text_col("family"), int_col("n"), int_col("d"), int_col("k"), text_col("k_is_bound"),
                 real_col("bound_eps"), real_col("eps"), int_col("trials"), int_col("successes"),
                 real_col("success_rate"), real_col("ci_low"), real_col("ci_high"), real_col("mean_normalised_error"),
                 real_col("all_rows_success_rate")});
    double min_bound_rate = 1;
    int bound_points = 0;
    bool bound_significantly_low = false;
    std::vector<std::string> bound_low_families;
    for (std::size_t ci = 0; ci < configs.size(); ++ci) {
      const auto& c = configs[ci];
      for (std::size_t ki = 0; ki < c.ks.size(); ++ki)
        for (std::size_t ei = 0; ei < sw.u6_eps.size(); ++ei) {
          const bool is_bound = c.bound_eps[ki] > 0;
          // At the bound's k only its own eps is the theorem's statement.
          if (is_bound && c.bound_eps[ki] != sw.u6_eps[ei]) continue;
          const std::size_t s = u6r[ci].successes[ki][ei];
          const Interval iv = clopper_pearson(s, static_cast<std::size_t>(sw.u6_trials));
          const double rate = static_cast<double>(s) / sw.u6_trials;
          if (is_bound) {
            ++bound_points;
            min_bound_rate = std::min(min_bound_rate, rate);
            if (iv.upper < 1 - kDelta) {
              bound_significantly_low = true;
              if (std::find(bound_low_families.begin(), bound_low_families.end(), families[c.family]) == bound_low_families.end())
                bound_low_families.push_back(families[c.family]);
            }
          }
          u6.add_row({families[c.family], c.n, c.d, c.ks[ki], is_bound, c.bound_eps[ki], sw.u6_eps[ei], sw.u6_trials, s,
                      rate, iv.lower, iv.upper, u6r[ci].mean_error[ki], u6r[ci].row_success[ki]});
        }
    }
    cli.write_table(u6, "linformer_theorem2.csv");

    // ---- Verdicts ----
    std::vector<ClaimRow> rows;
    {
      ClaimRow r{"U4", kSource, Verdict::holds, "minimum success rate of ||P R^T R w - P w|| < eps ||P w|| at the stated k over families, n, eps",
                 min_rate, 1 - kDelta, cli.evidence_path("linformer_theorem1.csv"), ""};
      if (families_bad.empty()) {
        r.verdict = Verdict::holds;
        r.note = "no configuration's Clopper-Pearson upper bound is below 1 - delta";
      } else if (families_ok.empty()) {
        r.verdict = Verdict::fails;
        r.note = "every family has configurations whose success rate is significantly below 1 - delta: " + join(families_bad);
      } else {
        r.verdict = Verdict::conditional;
        r.note = "holds only for input families " + join(families_ok) + "; significantly below 1 - delta for " + join(families_bad);
      }
      r.note += fmt::format("; the stated k is below n only for eps >= ~{} at n = {} (column k_stated_below_n)",
                            [&] {
                              for (double e : sw.eps) if (theorem1_k(sw.n.back(), e) < sw.n.back()) return e;
                              return 1.0;
                            }(),
                            sw.n.back());
      rows.push_back(r);
    }
    {
      ClaimRow r{"U5", kSource, Verdict::holds,
                 fmt::format("largest fitted exponent of k_needed(n) for Theorem 1's P R^T R at eps = {} (power law in n)", kU5Epsilon),
                 max_exponent == std::numeric_limits<double>::max() ? -1.0 : max_exponent, kLogExponentMax,
                 cli.evidence_path("linformer_rank_growth.csv"), ""};
      if (log_bad.empty()) r.verdict = Verdict::holds, r.note = "k_needed grows like log n (exponent interval below the threshold) for every family";
      else if (log_ok.empty()) r.verdict = Verdict::fails, r.note = "no family shows logarithmic growth of k_needed; not reached or polynomial: " + join(log_bad);
      else r.verdict = Verdict::conditional, r.note = "logarithmic (or constant) only for " + join(log_ok) + "; not for " + join(log_bad);
      if (max_exponent == std::numeric_limits<double>::max()) r.note += "; observed -1 means some needed k exceeded the grid (2^30)";
      r.note += "; best-rank SVD rows give the rank any P~ truncation needs";
      rows.push_back(r);
    }
    {
      ClaimRow r{"U6", kSource, Verdict::holds,
                 "minimum success rate of ||softmax(w E^T) F V - softmax(w) V|| < eps ||softmax(w)|| ||V||_2 at the bound's k (where k <= n)",
                 bound_points ? min_bound_rate : -1.0, 1 - kDelta, cli.evidence_path("linformer_theorem2.csv"), ""};
      const std::string where = fmt::format("the bound's k = 9 d ln d / eps^2 is below n in {} of {} cells of d in 16..128, eps in 0.1..0.5, n in 512..16384",
                                            below, cells);
      if (bound_points == 0) {
        r.verdict = Verdict::untested;
        r.observed.reset();
        r.threshold.reset();
        r.note = "the bound's k exceeds n everywhere on this sweep; " + where;
      } else if (bound_significantly_low) {
        r.verdict = Verdict::fails;
        r.note = "success rate significantly below 1 - delta at the bound's k for " + join(bound_low_families) + "; " + where;
      } else if (2 * below >= cells) {
        r.verdict = Verdict::holds;
        r.note = where;
      } else {
        r.verdict = Verdict::conditional;
        r.note = "the error bound holds at the bound's k where evaluated, but that k is a reduction only for long sequences: " + where;
      }
      rows.push_back(r);
    }
    rows.push_back({"U16", kSource, Verdict::untested, "CIFAR-10 validation accuracy of the five attentions", std::nullopt,
                    std::nullopt, "",
                    "no CIFAR-10 data and no network here, and the report's 50-epoch GPU training is far beyond this machine; "
                    "U17 tests the same ranking on Fashion-MNIST with a ViT trained here (exp_vit_training)"});
    cli.write_claims(rows);
  });
}
