// attend: one attention method of the library on the user's .npy inputs, the output written as .npy.
#include <CLI/CLI.hpp>
#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fmt/format.h>
#include <omp.h>
#include <optional>
#include <string>
#include <vector>

#include "attnlab/io/atomic_file.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/attention/linear_attention.hpp"
#include "attnlab/attention/linformer.hpp"
#include "attnlab/io/npy.hpp"
#include "attnlab/attention/nystrom.hpp"
#include "attnlab/attention/random_features.hpp"
#include "attnlab/attention/softmax_attention.hpp"
#include "attnlab/attention/streaming_attention.hpp"

namespace {

using namespace attnlab;
namespace fs = std::filesystem;

constexpr const char* kName = "attend";
// Linformer's k and Nystrom's m when not given: the UCU report's m, capped at the number of keys.
constexpr Eigen::Index kDefaultReducedSize = 64;

// Bad input found after parsing (a shape, a size out of range, an unreadable file): exit status 2, like a bad flag.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  fs::path q, k, v, out, save_draws, draws;
  std::string method = "exact";
  std::string dtype = "double";
  int threads = 0;
  std::uint64_t seed = CommonOptions{}.seed;
  Eigen::Index block = kDefaultKeyBlock;
  std::optional<Eigen::Index> proj;  // Linformer's k
  std::string projection = "gaussian";
  bool share_kv = false;
  std::optional<Eigen::Index> features;
  std::optional<double> temperature;
  bool iid = false;
  std::optional<Eigen::Index> landmarks;
  std::string pinv = "iterative";
  int pinv_iterations = kNystromformerPinvIterations;
  std::string pinv_init = to_string(PinvInit::per_matrix);
  double rcond = -1;
};

constexpr Eigen::Index kDefaultFeatures = 256;

const char* const kMethodHelp = R"(Methods (--method), all on every (batch, head) with one draw shared by all heads:
  exact           softmax(Q K^T / sqrt(d)) V, forming the n_q x n_k matrix
  streaming       the same, --block keys at a time with a running max and sum (online softmax)
  linear-shen     Shen et al.'s efficient attention softmax_row(Q) (softmax_col(K)^T V); no scale
  linear-elu      Katharopoulos et al.'s linear attention with phi = elu + 1; no scale
  linformer       softmax(Q (E K)^T / sqrt(d)) (F V), E and F --proj x n; needs n_q = n_k
                  draws: E.npy, F.npy (float64, --proj x n)
  random-fourier  the UCU report's random Fourier features, D = --features, w_r ~ N(0, I / tau)
                  draws: omega.npy (float64, D x d, row r = w_r)
  favor           Performer's FAVOR+ positive features, D = --features, w_r ~ N(0, I)
                  draws: omega.npy (float64, D x d, row r = w_r)
  nystrom         Nystromformer: --landmarks segment means, the --pinv pseudoinverse (nothing random)
Inputs: Q (n_q x d), K (n_k x d), V (n_k x d_v), each 2-D, or 3-D (heads, n, d) or 4-D (batch, heads,
n, d) stacks; a 2-D file is one head. The output has Q's leading axes and (n_q, d_v), in --dtype.
Exit status: 0 done, 1 the run failed (a non-finite output: nothing is written), 2 bad input.
)";

// A plain decimal integer in [lo, hi], with one message for either failure (CLI11's `&` prints both).
CLI::Validator integer_in(long long lo, long long hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        if (std::string why = NonNegativeInteger(s); !why.empty()) return why;
        if (s.size() > 18 || std::stoll(s) < lo || std::stoll(s) > hi) return fmt::format("{} is not in [{}, {}]", s, lo, hi);
        return {};
      },
      fmt::format("in [{}, {}]", lo, hi));
}

void add_options(CLI::App& app, Options& o) {
  // Validators are built here, not at namespace scope: CLI11 keeps global validators of its own
  // whose initialisation order relative to ours is unspecified.
  const CLI::Validator count = integer_in(1, 1 << 30);
  const CLI::Validator positive(
      [](std::string& s) -> std::string {
        if (std::string why = FiniteNumber(s); !why.empty()) return why;
        return std::stod(s) > 0 ? "" : "'" + s + "' is not positive";
      },
      "POSITIVE");
  app.add_option("--q", o.q, "queries, .npy")->required()->group("Inputs and output");
  app.add_option("--k", o.k, "keys, .npy")->required()->group("Inputs and output");
  app.add_option("--v", o.v, "values, .npy")->required()->group("Inputs and output");
  app.add_option("--out", o.out, "output .npy file (written atomically)")->required()->group("Inputs and output");
  app.add_option("--method", o.method, "attention method (see below)")
      ->check(CLI::IsMember({"exact", "streaming", "linear-shen", "linear-elu", "linformer", "random-fourier", "favor",
                             "nystrom"}))
      ->capture_default_str()->group("General");
  app.add_option("--dtype", o.dtype, "precision of the computation and the output")
      ->check(CLI::IsMember({"float", "double"}))->capture_default_str()->group("General");
  app.add_option("--threads", o.threads, "worker threads over heads (default: all cores); output identical for any")
      ->check(integer_in(1, 1024))->group("General");
  app.add_option("--seed", o.seed, "seed of the random draws")->check(NonNegativeInteger)->capture_default_str()
      ->group("Random draws (linformer, random-fourier, favor)");
  auto* save = app.add_option("--save-draws", o.save_draws, "write the draws as .npy into this directory")
                   ->group("Random draws (linformer, random-fourier, favor)");
  app.add_option("--draws", o.draws, "use the draws in this directory (as --save-draws wrote them) instead of --seed")
      ->check(CLI::ExistingDirectory)->excludes(save)->group("Random draws (linformer, random-fourier, favor)");
  app.add_option("--block", o.block, "keys per block")->check(count)->capture_default_str()->group("streaming");
  app.add_option("--proj", o.proj, "k: keys and values projected to this many rows (default 64, or n if smaller)")
      ->check(count)->group("linformer");
  app.add_option("--projection", o.projection, "E, F with N(0, 1/k) entries, or segment means (deterministic)")
      ->check(CLI::IsMember({"gaussian", "segment-mean"}))->capture_default_str()->group("linformer");
  app.add_flag("--share-kv", o.share_kv, "E = F (one gaussian draw)")->group("linformer");
  app.add_option("--features", o.features, "D: number of random features (default 256; with --draws, omega's rows)")
      ->check(count)->group("random-fourier, favor");
  app.add_option("--temperature", o.temperature, "random-fourier: tau of softmax(Q K^T / tau) (default sqrt(d))")
      ->check(positive)->group("random-fourier, favor");
  app.add_flag("--iid", o.iid, "favor: independent directions (default: orthogonal blocks, FAVOR+'s ORF)")
      ->group("random-fourier, favor");
  app.add_option("--landmarks", o.landmarks, "m: segment means of Q and K (default 64, or min(n_q, n_k) if smaller)")
      ->check(count)->group("nystrom");
  app.add_option("--pinv", o.pinv, "pseudoinverse of the m x m landmark kernel")
      ->check(CLI::IsMember({"iterative", "svd"}))->capture_default_str()->group("nystrom");
  app.add_option("--pinv-iterations", o.pinv_iterations, "iterations of the iterative pseudoinverse")
      ->check(integer_in(0, 1000))->capture_default_str()->group("nystrom");
  std::vector<std::string> inits;
  for (PinvInit i : pinv_inits()) inits.push_back(to_string(i));
  app.add_option("--pinv-init", o.pinv_init, "initialisation Z_0 = alpha A^T of the iterative pseudoinverse")
      ->check(CLI::IsMember(inits))->capture_default_str()->group("nystrom");
  app.add_option("--rcond", o.rcond, "svd: singular values below rcond * s_max are dropped (negative: m * eps)")
      ->check(FiniteNumber)->capture_default_str()->group("nystrom");
  app.footer(kMethodHelp);
}

// One input read as a (batch, heads, n, d) stack; `dims` is the file's number of axes.
template <typename T>
struct Input {
  const char* flag;
  fs::path path;
  HeadStack<T> stack;
  std::size_t dims = 0;

  [[noreturn]] void refuse(const std::string& problem) const {
    throw UsageError(fmt::format("{}: {}: {}", flag, path.string(), problem));
  }
};

template <typename T>
Input<T> read_input(const char* flag, const fs::path& path) {
  try {
    const NpyArray array = read_npy(path);
    Input<T> in{flag, path, head_stack_from_npy<T>(array, path.string()), array.dims()};
    if (in.stack.n() < 1 || in.stack.d() < 1)
      in.refuse(fmt::format("has n = {} rows of d = {} columns; both must be at least 1", in.stack.n(), in.stack.d()));
    return in;
  } catch (const NpyError& e) {
    throw UsageError(fmt::format("{}: {}", flag, e.what()));
  }
}

// Q, K, V must agree in (batch, heads); K in d with Q; V in n with K.
template <typename T>
void check_shapes(const Input<T>& q, const Input<T>& k, const Input<T>& v) {
  for (const Input<T>* in : {&k, &v})
    if (in->stack.batch() != q.stack.batch() || in->stack.heads() != q.stack.heads())
      in->refuse(fmt::format("(batch, heads) = ({}, {}) but --q has ({}, {})", in->stack.batch(), in->stack.heads(),
                             q.stack.batch(), q.stack.heads()));
  if (k.stack.d() != q.stack.d()) k.refuse(fmt::format("d = {} but --q has d = {}", k.stack.d(), q.stack.d()));
  if (v.stack.n() != k.stack.n()) v.refuse(fmt::format("n = {} rows but --k has n = {}", v.stack.n(), k.stack.n()));
}

// A size flag in [1, limit]: the given value, else min(default, limit).
Eigen::Index reduced_size(const char* flag, const std::optional<Eigen::Index>& given, Eigen::Index limit,
                          const char* limit_name) {
  if (!given) return std::min(kDefaultReducedSize, limit);
  if (*given > limit) throw UsageError(fmt::format("{} (= {}) exceeds {} = {}", flag, *given, limit_name, limit));
  return *given;
}

Mat<double> read_draw(const fs::path& dir, const char* file) {
  try {
    return read_npy_matrix<double>(dir / file);
  } catch (const NpyError& e) {
    throw UsageError(fmt::format("--draws: {}", e.what()));
  }
}

// The random (or user-given) matrices of a method; empty for the deterministic ones.
struct Draws {
  std::optional<LinformerProjections<double>> linformer;
  std::optional<RandomFeatureDraw> features;
};

Draws linformer_draws(const Options& o, Eigen::Index n) {
  if (!o.draws.empty()) {
    LinformerProjections<double> p{read_draw(o.draws, "E.npy"), read_draw(o.draws, "F.npy")};
    if (p.e.cols() != n || p.f.rows() != p.e.rows() || p.f.cols() != n)
      throw UsageError(fmt::format("--draws: {}: E is {} x {} and F {} x {}; both must be k x n with n = {}",
                                   o.draws.string(), p.e.rows(), p.e.cols(), p.f.rows(), p.f.cols(), n));
    if (o.proj && *o.proj != p.k())
      throw UsageError(fmt::format("--proj (= {}) differs from the k = {} rows of {}", *o.proj, p.k(),
                                   (o.draws / "E.npy").string()));
    return {p, {}};
  }
  const Eigen::Index kp = reduced_size("--proj", o.proj, n, "n");
  if (o.projection == "segment-mean") return {segment_mean_projections(n, kp), {}};
  Rng rng(o.seed);
  return {gaussian_projections(n, kp, o.share_kv ? ProjectionSharing::shared : ProjectionSharing::separate, rng), {}};
}

Draws feature_draws(const Options& o, Eigen::Index d, double temperature) {
  if (!o.draws.empty()) {
    const Mat<double> w = read_draw(o.draws, "omega.npy");
    if (w.cols() != d)
      throw UsageError(fmt::format("--draws: {}: omega is {} x {} but the inputs have d = {}",
                                   (o.draws / "omega.npy").string(), w.rows(), w.cols(), d));
    if (o.features && *o.features != w.rows())
      throw UsageError(fmt::format("--features (= {}) differs from the {} rows of {}", *o.features, w.rows(),
                                   (o.draws / "omega.npy").string()));
    // stddev and orthogonal describe how w was drawn; the attention uses w alone.
    return {{}, RandomFeatureDraw{w, 1.0, false}};
  }
  const Eigen::Index D = o.features.value_or(kDefaultFeatures);
  Rng rng(o.seed);
  if (o.method == "favor") return {{}, draw_favor_features(d, D, !o.iid, rng)};
  return {{}, draw_fourier_features(d, D, 1 / std::sqrt(temperature), rng)};
}

void save_draws(const fs::path& dir, const Draws& draws) {
  if (draws.linformer) {
    write_npy(dir / "E.npy", to_npy(draws.linformer->e));
    write_npy(dir / "F.npy", to_npy(draws.linformer->f));
  }
  if (draws.features) write_npy(dir / "omega.npy", to_npy(Mat<double>(draws.features->w)));
}

NystromOptions nystrom_options(const Options& o, Eigen::Index n_q, Eigen::Index n_k) {
  NystromOptions opt;
  opt.landmarks = reduced_size("--landmarks", o.landmarks, std::min(n_q, n_k), "min(n_q, n_k)");
  opt.pinv = o.pinv == "svd" ? PinvMethod::svd : PinvMethod::iterative;
  opt.iterations = o.pinv_iterations;
  for (PinvInit i : pinv_inits())
    if (to_string(i) == o.pinv_init) opt.init = i;
  opt.rcond = o.rcond;
  return opt;
}

// --out must name a file in an existing, writable directory; checked before any work.
void check_output_path(const fs::path& out) {
  if (fs::is_directory(out)) throw UsageError(fmt::format("--out: {} is a directory", out.string()));
  const fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
  if (!fs::is_directory(dir)) throw UsageError(fmt::format("--out: {} is not an existing directory", dir.string()));
  try {
    ensure_writable_directory(dir);
  } catch (const OutputError& e) {
    throw UsageError(fmt::format("--out: {}", e.what()));
  }
}

// Refuses to write a result holding NaN or infinity, naming the first one.
template <typename T>
void check_finite(const HeadStack<T>& out, const std::string& method) {
  std::size_t bad = 0;
  std::string first;
  for (Eigen::Index h = 0; h < out.count(); ++h)
    for (Eigen::Index j = 0; j < out.d(); ++j)
      for (Eigen::Index i = 0; i < out.n(); ++i)
        if (!std::isfinite(out[h](i, j)) && bad++ == 0)
          first = fmt::format("batch {}, head {}, row {}, column {}", h / out.heads(), h % out.heads(), i, j);
  if (bad > 0)
    throw std::runtime_error(fmt::format("{} gave {} non-finite output values (the first at {}); nothing written",
                                         method, bad, first));
}

template <typename T>
int run(const Options& o) {
  check_output_path(o.out);
  const Input<T> q = read_input<T>("--q", o.q), k = read_input<T>("--k", o.k), v = read_input<T>("--v", o.v);
  check_shapes(q, k, v);
  if (!o.save_draws.empty()) {
    try {
      ensure_writable_directory(o.save_draws);
    } catch (const OutputError& e) {
      throw UsageError(fmt::format("--save-draws: {}", e.what()));
    }
  }
  const Eigen::Index n_q = q.stack.n(), n_k = k.stack.n(), d = q.stack.d();

  Draws draws;
  HeadStack<T> out;
  if (o.method == "exact") {
    out = softmax_attention(q.stack, k.stack, v.stack);
  } else if (o.method == "streaming") {
    out = streaming_attention(q.stack, k.stack, v.stack, o.block);
  } else if (o.method == "linear-shen") {
    out = efficient_attention(q.stack, k.stack, v.stack);
  } else if (o.method == "linear-elu") {
    out = elu_linear_attention(q.stack, k.stack, v.stack);
  } else if (o.method == "linformer") {
    if (n_k != n_q) k.refuse(fmt::format("linformer needs as many keys as queries: n = {} but --q has n = {}", n_k, n_q));
    draws = linformer_draws(o, n_k);
    out = linformer_attention(q.stack, k.stack, v.stack, draws.linformer->cast<T>());
  } else if (o.method == "random-fourier") {
    const double tau = o.temperature.value_or(std::sqrt(static_cast<double>(d)));
    draws = feature_draws(o, d, tau);
    out = random_fourier_attention(q.stack, k.stack, v.stack, *draws.features, tau);
  } else if (o.method == "favor") {
    draws = feature_draws(o, d, 0);
    out = favor_attention(q.stack, k.stack, v.stack, *draws.features);
  } else {
    out = nystrom_attention(q.stack, k.stack, v.stack, nystrom_options(o, n_q, n_k));
  }
  check_finite(out, o.method);

  if (!o.save_draws.empty()) save_draws(o.save_draws, draws);
  // The output keeps Q's leading axes: a 2-D Q gives an (n_q, d_v) array.
  NpyArray array = to_npy(out);
  array.shape.erase(array.shape.begin(), array.shape.begin() + static_cast<std::ptrdiff_t>(kNpyMaxDims - q.dims));
  write_npy(o.out, array);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app("attend: an attention method of attnlab on .npy inputs, the output written as .npy", kName);
  add_options(app, o);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    fmt::print("{}", app.help());
    return 0;
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "{}: {}\n", kName, e.what());
    return kExitUsage;
  }
  omp_set_num_threads(o.threads > 0 ? o.threads : omp_get_num_procs());
  // Heads run in parallel; Eigen's own threading would change summation order with --threads.
  Eigen::setNbThreads(1);
  try {
    return o.dtype == "float" ? run<float>(o) : run<double>(o);
  } catch (const UsageError& e) {
    fmt::print(stderr, "{}: {}\n", kName, e.what());
    return kExitUsage;
  } catch (const std::invalid_argument& e) {
    // The library refusing a shape or parameter the checks above let through: still the input's fault.
    fmt::print(stderr, "{}: {}\n", kName, e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: {}\n", kName, e.what());
    return kExitFailure;
  }
}
