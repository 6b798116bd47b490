// Writes the library's inputs, random draws and outputs as .npy plus manifest.json, for second_opinion.py.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "attnlab/io/atomic_file.hpp"
#include "attnlab/lab/cli_validators.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/linalg/iterative_pinv.hpp"
#include "attnlab/attention/linear_attention.hpp"
#include "attnlab/attention/linformer.hpp"
#include "attnlab/io/npy.hpp"
#include "attnlab/attention/nystrom.hpp"
#include "attnlab/linalg/pseudoinverse.hpp"
#include "attnlab/qk/qk_split.hpp"
#include "attnlab/attention/random_features.hpp"
#include "attnlab/core/rng.hpp"
#include "attnlab/attention/softmax_attention.hpp"
#include "attnlab/attention/streaming_attention.hpp"
#include "attnlab/qk/sym_eigen.hpp"
#include "attnlab/theory/weighted_lowrank.hpp"

using namespace attnlab;

namespace second_opinion_producer {  // compiled beside other programs, linked alone (CMakeLists.txt: attnlab_programs)

namespace {

// The sizes of one round of cases: n positions (or rows), d features, dv value columns, and
// the method parameters that depend on them.
struct Sizes {
  Eigen::Index n, d, dv;
};

// One case of the manifest: its files by role, its sizes and parameters as JSON numbers.
struct Case {
  std::string name, kind, dtype;
  std::map<std::string, double> params;
  std::map<std::string, std::string> files;
};

// Writes each case's arrays into `dir` as <case>.<role>.npy and collects the manifest.
class CaseWriter {
 public:
  explicit CaseWriter(std::filesystem::path dir) : dir_(std::move(dir)) {}

  template <typename T>
  Case& begin(const std::string& kind, const Sizes& s) {
    Case c;
    c.name = fmt::format("{:03d}_{}_{}", cases_.size(), kind, dtype_name<T>());
    c.kind = kind;
    c.dtype = dtype_name<T>();
    c.params = {{"n", double(s.n)}, {"d", double(s.d)}, {"dv", double(s.dv)}};
    cases_.push_back(std::move(c));
    return cases_.back();
  }

  template <typename M>
  void put(Case& c, const std::string& role, const M& m) {
    const std::string file = c.name + "." + role + ".npy";
    write_npy(dir_ / file, to_npy(m));
    c.files[role] = file;
  }

  void put_scalar(Case& c, const std::string& role, double value) { put(c, role, Vec<double>(Vec<double>::Constant(1, value))); }

  void write_manifest(std::uint64_t seed) const {
    std::string json = fmt::format("{{\n  \"seed\": {},\n  \"cases\": [", seed);
    for (std::size_t i = 0; i < cases_.size(); ++i) {
      const Case& c = cases_[i];
      json += fmt::format("{}\n    {{\"name\": \"{}\", \"kind\": \"{}\", \"dtype\": \"{}\", \"params\": {{", i ? "," : "",
                          c.name, c.kind, c.dtype);
      std::string sep;
      for (const auto& [key, value] : c.params) json += fmt::format("{}\"{}\": {}", std::exchange(sep, ", "), key, value);
      json += "}, \"files\": {";
      sep.clear();
      for (const auto& [role, file] : c.files) json += fmt::format("{}\"{}\": \"{}\"", std::exchange(sep, ", "), role, file);
      json += "}}";
    }
    json += "\n  ]\n}\n";
    write_file_atomically(dir_ / "manifest.json", json);
  }

  std::size_t size() const { return cases_.size(); }

 private:
  template <typename T>
  static std::string dtype_name() {
    return std::is_same_v<T, float> ? "float32" : "float64";
  }

  std::filesystem::path dir_;
  std::vector<Case> cases_;
};

template <typename T>
Mat<T> gaussian(Eigen::Index rows, Eigen::Index cols, Rng& rng) {
  return gaussian_matrix<double>(rows, cols, rng).cast<T>();
}

// A rows x cols matrix (rows >= cols) with singular values spread geometrically over [1/cond, 1].
template <typename T>
Mat<T> conditioned(Eigen::Index rows, Eigen::Index cols, double cond, Rng& rng) {
  return matrix_with_singular_values(rows, cols, geometric_spectrum(std::min(rows, cols), cond), rng).cast<T>();
}

// Every attention method on one Q, K, V, with its random draws written beside the output.
template <typename T>
void attention_cases(CaseWriter& w, const Sizes& s, Rng& rng) {
  const Mat<T> q = gaussian<T>(s.n, s.d, rng), k = gaussian<T>(s.n, s.d, rng), v = gaussian<T>(s.n, s.dv, rng);
  auto qkv = [&](const std::string& kind, T qk_scale = T(1)) -> Case& {
    Case& c = w.begin<T>(kind, s);
    w.put(c, "q", Mat<T>(qk_scale * q));
    w.put(c, "k", Mat<T>(qk_scale * k));
    w.put(c, "v", v);
    return c;
  };
  w.put(qkv("softmax_attention"), "out", softmax_attention(q, k, v));
  {
    const Eigen::Index block = 3;  // several blocks even at n = 4, so the running rescaling is exercised
    Case& c = qkv("streaming_attention");
    c.params["key_block"] = double(block);
    w.put(c, "out", streaming_attention(q, k, v, block));
  }
  w.put(qkv("efficient_attention"), "out", efficient_attention(q, k, v));
  w.put(qkv("elu_linear_attention"), "out", elu_linear_attention(q, k, v));
  {
    const Eigen::Index kp = std::max<Eigen::Index>(1, s.n / 2);
    const auto proj = gaussian_projections(s.n, kp, ProjectionSharing::separate, rng).cast<T>();
    Case& c = qkv("linformer_attention");
    w.put(c, "e", proj.e);
    w.put(c, "f", proj.f);
    w.put(c, "out", linformer_attention(q, k, v, proj));
  }
  {
    const double tau = std::sqrt(double(s.d));  // softmax attention's temperature
    const RandomFeatureDraw draw = draw_fourier_features(s.d, 4 * s.d + 8, 1 / std::sqrt(tau), rng);
    // Q / 2, K / 2: with unit-variance entries the kernel exp(-||q - k||^2 / 2 tau) is about
    // exp(-sqrt(d)), and the signed denominator cancels to 1e-3 of its terms at d = 14; halved, the
    // cancellation stays below a factor 5 and the comparison can resolve errors of 3e4 eps.
    const T half = T(0.5);
    Case& c = qkv("random_fourier_attention", half);
    c.params["temperature"] = tau;
    w.put(c, "w", draw.w);
    w.put(c, "out", random_fourier_attention(Mat<T>(half * q), Mat<T>(half * k), v, draw, tau));
  }
  {
    const RandomFeatureDraw draw = draw_favor_features(s.d, 2 * s.d + 1, true, rng);  // a partial last block
    Case& c = qkv("favor_attention");
    w.put(c, "w", draw.w);
    w.put(c, "out", favor_attention(q, k, v, draw));
  }
  const Eigen::Index m = std::min<Eigen::Index>(s.n, 4);
  for (const PinvMethod method : {PinvMethod::svd, PinvMethod::iterative}) {
    const NystromOptions options{.landmarks = m, .pinv = method};
    Case& c = qkv(method == PinvMethod::svd ? "nystrom_svd" : "nystrom_iterative");
    c.params["landmarks"] = double(m);
    c.params["iterations"] = options.iterations;
    w.put(c, "out", nystrom_attention(q, k, v, options));
  }
}

// S_w = (W_Q W_K^T + W_K W_Q^T) / 2 decomposed densely and through the thin QR of [W_Q W_K].
template <typename T>
void eigen_cases(CaseWriter& w, const Sizes& s, Rng& rng) {
  const Eigen::Index dk = std::max<Eigen::Index>(1, s.d / 3);
  const Mat<T> wq = gaussian<T>(s.d, dk, rng), wk = gaussian<T>(s.d, dk, rng);
  for (const std::string kind : {"sym_eigen_dense", "sym_eigen_low_rank_qr"}) {
    const EigenPairs<T> pairs =
        kind == "sym_eigen_dense" ? eigen_dense(symmetric_part(qk_product(wq, wk))) : eigen_low_rank_qr(wq, wk);
    if (pairs.status != EigenStatus::ok) throw std::runtime_error(kind + ": " + pairs.detail);
    Case& c = w.begin<T>(kind, s);
    c.params["dk"] = double(dk);
    w.put(c, "wq", wq);
    w.put(c, "wk", wk);
    w.put(c, "values", pairs.values);
    w.put(c, "vectors", pairs.vectors);
  }
}

// The pseudoinverses of a well-conditioned n x d matrix (n >= d, kappa = 4: the normal equations
// square it, and their tolerance must stay below the self-test's perturbation). The iterative one
// runs to convergence: from alpha sigma_min^2 >= 1 / (d kappa^2) its seventh-order step needs about
// log_7(37 d kappa^2) < 6 iterations for d <= 64; 30 leave a wide margin.
template <typename T>
void pinv_cases(CaseWriter& w, const Sizes& s, Rng& rng) {
  const Mat<T> a = conditioned<T>(std::max(s.n, s.d), s.d, 4.0, rng);
  // The iteration is for square matrices (Nystromformer's landmark kernel): a square one of its own.
  const Mat<T> square = conditioned<T>(s.d, s.d, 4.0, rng);
  const int iterations = 30;
  const std::vector<std::tuple<std::string, Mat<T>, Mat<T>>> results = {
      {"pinv_svd", a, pinv_svd(a).pinv},
      {"pinv_cod", a, pinv_cod(a).pinv},
      {"pinv_normal_equations", a, pinv_normal_equations(a).pinv},
      {"pinv_iterative", square, iterative_pinv(square, iterations)},
  };
  for (const auto& [kind, input, p] : results) {
    Case& c = w.begin<T>(kind, s);
    if (kind == "pinv_iterative") c.params["iterations"] = iterations;
    w.put(c, "a", input);
    w.put(c, "pinv", p);
  }
}

// The objective ||B - X Z X^T||_F^2 at a random Z, in T.
template <typename T>
void objective_case(CaseWriter& w, const Sizes& s, Rng& rng) {
  const Mat<T> b = gaussian<T>(s.n, s.n, rng), x = gaussian<T>(s.n, s.d, rng), z = gaussian<T>(s.d, s.d, rng);
  Case& c = w.begin<T>("lowrank_objective", s);
  w.put(c, "b", b);
  w.put(c, "x", x);
  w.put(c, "z", z);
  w.put_scalar(c, "objective", lowrank_objective(b, x, z));
}

// Double only (the library's minimisers and SVD truncation are): the best rank-r approximation
// of a Gaussian matrix, and the weighted regression's minimisers for a well-conditioned X.
void double_only_cases(CaseWriter& w, const Sizes& s, Rng& rng) {
  const Eigen::Index r = std::max<Eigen::Index>(1, s.d / 2);
  {
    const Mat<double> a = gaussian<double>(s.n, s.d, rng);
    const LowRankFactors f = truncated_svd_factors(a, r);
    Case& c = w.begin<double>("svd_truncation", s);
    c.params["rank"] = double(r);
    w.put(c, "a", a);
    w.put(c, "left", f.left);
    w.put(c, "right", f.right);
  }
  {
    const Eigen::Index n = std::max(s.n, s.d);
    const Mat<double> b = gaussian<double>(n, n, rng), x = conditioned<double>(n, s.d, 10.0, rng);
    const ClosedFormLowRank closed = closed_form_lowrank(b, x, r);
    Case& c = w.begin<double>("lowrank_minimiser", s);
    c.params["rank"] = double(r);
    w.put(c, "b", b);
    w.put(c, "x", x);
    w.put(c, "z_star", unconstrained_minimiser(b, x));
    w.put(c, "z_r", closed.factors.product());
    w.put_scalar(c, "minimum", closed.predicted_minimum());
  }
}

template <typename T>
void cases_of_type(CaseWriter& w, const Sizes& s, std::uint64_t seed, std::uint64_t round) {
  Rng rng(derive_seed(seed, round));
  attention_cases<T>(w, s, rng);
  eigen_cases<T>(w, s, rng);
  pinv_cases<T>(w, s, rng);
  objective_case<T>(w, s, rng);
  if constexpr (std::is_same_v<T, double>) double_only_cases(w, s, rng);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string name = "second_opinion_producer";
  std::uint64_t seed = 20250311;
  int random_rounds = 3;
  std::filesystem::path out;
  CLI::App app("Writes inputs, random draws and the library's outputs as .npy with manifest.json, "
               "for verify/second_opinion/second_opinion.py to recompute with NumPy/SciPy.",
               name);
  app.add_option("--out", out, "output directory (created if needed)")->required();
  app.add_option("--seed", seed, "seed of the random sizes, inputs and draws")->check(NonNegativeInteger)->capture_default_str();
  app.add_option("--random-rounds", random_rounds, "rounds of random sizes after the edge sizes 1, 2, 3")
      ->check(NonNegativeInteger & CLI::Range(0, 20))->capture_default_str();
  if (const auto status = parse_command_line(app, argc, argv)) return *status;
  try {
    ensure_writable_directory(out);
  } catch (const OutputError& e) {
    fmt::print(stderr, "{}: {}\n", name, e.what());
    return kExitUsage;
  }
  return run_experiment(name, [&] {
    fmt::print("{}: seed {}\n", name, seed);
    CaseWriter w(out);
    std::vector<Sizes> sizes = {{1, 1, 1}, {2, 2, 2}, {3, 3, 3}};  // edge sizes, as Eigen's tests keep them
    Rng size_rng(seed);
    for (int i = 0; i < random_rounds; ++i) {
      auto draw = [&](Eigen::Index lo, Eigen::Index hi) { return lo + Eigen::Index(size_rng.uniform() * double(hi - lo + 1)); };
      sizes.push_back({draw(4, 48), draw(2, 16), draw(1, 8)});
    }
    for (std::size_t round = 0; round < sizes.size(); ++round) {
      cases_of_type<float>(w, sizes[round], seed, 2 * round);
      cases_of_type<double>(w, sizes[round], seed, 2 * round + 1);
    }
    w.write_manifest(seed);
    fmt::print("{}: {} cases written to {}\n", name, w.size(), out.string());
  });
}

}  // namespace second_opinion_producer
