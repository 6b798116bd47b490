// attend: one attention method of the library on the user's .npy inputs, the output written as .npy.
#include <CLI/CLI.hpp>
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <new>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <omp.h>
#include <optional>
#include <string>
#include <vector>

#include "attnlab/io/atomic_file.hpp"
#include "attnlab/io/memory_budget.hpp"
#include "attnlab/lab/cli_validators.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/attention/registry.hpp"
#include "attnlab/attention/streaming_attention.hpp"
#include "attnlab/io/npy.hpp"

namespace attend {  // compiled beside other programs, linked alone (CMakeLists.txt: attnlab_programs)

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
  std::string impl = "reference";
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

constexpr Eigen::Index kDefaultFeatures = MethodParams{}.features;

// The run's estimated peak memory, kept for the message should an allocation fail anyway.
double current_need = 0;

// The footer of --help: every method of the registry with its summary, and the files of its draws.
std::string method_help() {
  std::string help = "Methods (--method), all on every (batch, head) with one draw shared by all heads:\n";
  for (const AttentionMethod& m : attention_methods()) {
    help += fmt::format("  {:<15} {}{}\n", m.name, m.summary, m.has_fast() ? "" : " (reference only)");
    if (m.name == "linformer") help += fmt::format("  {:<15} draws: E.npy, F.npy (float64, --proj x n)\n", "");
    if (m.name == "random-fourier" || m.name == "favor")
      help += fmt::format("  {:<15} draws: omega.npy (float64, D x d, row r = w_r)\n", "");
  }
  help += R"(--impl reference runs each method as its paper states it (what the checks define it by); --impl
fast runs the blocked, GEMM-shaped kernel where the method has one (the same result up to rounding).
Inputs: Q (n_q x d), K (n_k x d), V (n_k x d_v), each 2-D, or 3-D (heads, n, d) or 4-D (batch, heads,
n, d) stacks; a 2-D file is one head. The output has Q's leading axes and (n_q, d_v), in --dtype.
Exit status: 0 done; 1 the run failed (a non-finite output, or out of memory despite the estimate:
nothing is written); 2 bad input, including an input whose estimated memory exceeds what is available
(checked before any large allocation).
)";
  return help;
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
  app.add_option("--q", o.q, "queries, .npy")->type_name("FILE")->required()->group("Inputs and output");
  app.add_option("--k", o.k, "keys, .npy")->type_name("FILE")->required()->group("Inputs and output");
  app.add_option("--v", o.v, "values, .npy")->type_name("FILE")->required()->group("Inputs and output");
  app.add_option("--out", o.out, "output .npy file (written atomically)")->type_name("FILE")->required()->group("Inputs and output");
  const CLI::Validator method_name(
      [](std::string& s) -> std::string {
        try {
          attention_method(s);
          return {};
        } catch (const std::invalid_argument& e) {
          return e.what();
        }
      },
      "METHOD");
  app.add_option("--method", o.method, "attention method (see below)")->check(method_name)->capture_default_str()
      ->group("General");
  app.add_option("--impl", o.impl, "the method's reference kernel or its fast kernel (see below)")
      ->check(CLI::IsMember({to_string(Impl::reference), to_string(Impl::fast)}))->capture_default_str()->group("General");
  app.add_option("--dtype", o.dtype, "precision of the computation and the output")
      ->check(CLI::IsMember({"float", "double"}))->capture_default_str()->group("General");
  app.add_option("--threads", o.threads, "worker threads over heads, 1 to 1024 (default: all cores); output identical for any")
      ->check(integer_in(1, 1024))->group("General");
  app.add_option("--seed", o.seed, "seed of the random draws")->check(NonNegativeInteger)->capture_default_str()
      ->group("Random draws (linformer, random-fourier, favor)");
  auto* save = app.add_option("--save-draws", o.save_draws, "write the draws as .npy into this directory")->type_name("DIR")
                   ->group("Random draws (linformer, random-fourier, favor)");
  app.add_option("--draws", o.draws, "use the draws in this directory (as --save-draws wrote them) instead of --seed")
      ->type_name("DIR")
      ->check(CLI::ExistingDirectory)->excludes(save)->group("Random draws (linformer, random-fourier, favor)");
  app.add_option("--block", o.block, "keys per block, 1 to 2^30")->check(count)->capture_default_str()->group("streaming");
  app.add_option("--proj", o.proj, "k: keys and values projected to this many rows, 1 to 2^30 (default 64, or n if smaller)")
      ->check(count)->group("linformer");
  app.add_option("--projection", o.projection, "E, F with N(0, 1/k) entries, or segment means (deterministic)")
      ->check(CLI::IsMember({"gaussian", "segment-mean"}))->capture_default_str()->group("linformer");
  app.add_flag("--share-kv", o.share_kv, "E = F (one gaussian draw)")->group("linformer");
  app.add_option("--features", o.features, "D: number of random features, 1 to 2^30 (default 256; with --draws, omega's rows)")
      ->check(count)->group("random-fourier, favor");
  app.add_option("--temperature", o.temperature, "random-fourier: tau > 0 of softmax(Q K^T / tau) (default sqrt(d))")
      ->check(positive)->group("random-fourier, favor");
  app.add_flag("--iid", o.iid, "favor: independent directions (default: orthogonal blocks, FAVOR+'s ORF)")
      ->group("random-fourier, favor");
  app.add_option("--landmarks", o.landmarks, "m: segment means of Q and K, 1 to 2^30 (default 64, or min(n_q, n_k) if smaller)")
      ->check(count)->group("nystrom");
  app.add_option("--pinv", o.pinv, "pseudoinverse of the m x m landmark kernel")
      ->check(CLI::IsMember({"iterative", "svd"}))->capture_default_str()->group("nystrom");
  app.add_option("--pinv-iterations", o.pinv_iterations, "iterations of the iterative pseudoinverse, 0 to 1000")
      ->check(integer_in(0, 1000))->capture_default_str()->group("nystrom");
  std::vector<std::string> inits;
  for (PinvInit i : pinv_inits()) inits.push_back(to_string(i));
  app.add_option("--pinv-init", o.pinv_init, "initialisation Z_0 = alpha A^T of the iterative pseudoinverse")
      ->check(CLI::IsMember(inits))->capture_default_str()->group("nystrom");
  app.add_option("--rcond", o.rcond, "svd: singular values below rcond * s_max are dropped (negative: m * eps)")
      ->check(FiniteNumber)->capture_default_str()->group("nystrom");
  app.footer(method_help());
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
using Draws = MethodDraws;

Draws linformer_draws(const Options& o, MethodParams& params, Eigen::Index n) {
  if (!o.draws.empty()) {
    LinformerProjections<double> p{read_draw(o.draws, "E.npy"), read_draw(o.draws, "F.npy")};
    if (p.e.cols() != n || p.f.rows() != p.e.rows() || p.f.cols() != n)
      throw UsageError(fmt::format("--draws: {}: E is {} x {} and F {} x {}; both must be k x n with n = {}",
                                   o.draws.string(), p.e.rows(), p.e.cols(), p.f.rows(), p.f.cols(), n));
    if (o.proj && *o.proj != p.k())
      throw UsageError(fmt::format("--proj (= {}) differs from the k = {} rows of {}", *o.proj, p.k(),
                                   (o.draws / "E.npy").string()));
    params.projected = p.k();
    return {p, {}};
  }
  params.projected = reduced_size("--proj", o.proj, n, "n");
  params.segment_mean_projection = o.projection == "segment-mean";
  params.share_kv = o.share_kv;
  Rng rng(o.seed);
  return attention_method("linformer").draw(params, n, 0, rng);
}

Draws feature_draws(const Options& o, MethodParams& params, Eigen::Index d) {
  if (!o.draws.empty()) {
    const Mat<double> w = read_draw(o.draws, "omega.npy");
    if (w.cols() != d)
      throw UsageError(fmt::format("--draws: {}: omega is {} x {} but the inputs have d = {}",
                                   (o.draws / "omega.npy").string(), w.rows(), w.cols(), d));
    if (o.features && *o.features != w.rows())
      throw UsageError(fmt::format("--features (= {}) differs from the {} rows of {}", *o.features, w.rows(),
                                   (o.draws / "omega.npy").string()));
    // stddev and orthogonal describe how w was drawn; the attention uses w alone.
    params.features = w.rows();
    return {{}, RandomFeatureDraw{w, 1.0, false}};
  }
  params.features = o.features.value_or(kDefaultFeatures);
  Rng rng(o.seed);
  return attention_method(o.method).draw(params, 0, d, rng);
}

void save_draws(const fs::path& dir, const Draws& draws) {
  if (draws.projections) {
    write_npy(dir / "E.npy", to_npy(draws.projections->e));
    write_npy(dir / "F.npy", to_npy(draws.projections->f));
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
// Options that mean something only for some methods are refused with the others, rather than
// ignored: a user who passes --landmarks with --method exact believes something that is not true.
// (--seed is accepted with every method, so one command line can loop over methods; only
// linformer with gaussian projections, random-fourier and favor draw anything.)
void check_option_use(const CLI::App& app, const Options& o) {
  struct Use {
    const char* flag;
    std::vector<std::string> methods;
  };
  const std::vector<Use> uses = {
      {"--block", {"streaming"}},
      {"--proj", {"linformer"}},
      {"--projection", {"linformer"}},
      {"--share-kv", {"linformer"}},
      {"--features", {"random-fourier", "favor"}},
      {"--temperature", {"random-fourier"}},
      {"--iid", {"favor"}},
      {"--landmarks", {"nystrom"}},
      {"--pinv", {"nystrom"}},
      {"--pinv-iterations", {"nystrom"}},
      {"--pinv-init", {"nystrom"}},
      {"--rcond", {"nystrom"}},
  };
  for (const Use& u : uses)
    if (app.count(u.flag) > 0 && std::find(u.methods.begin(), u.methods.end(), o.method) == u.methods.end())
      throw UsageError(fmt::format("{} applies to --method {} only, not to --method {}", u.flag,
                                   fmt::join(u.methods, " or "), o.method));
  if (o.method == "nystrom") {
    if (o.pinv == "svd" && (app.count("--pinv-iterations") > 0 || app.count("--pinv-init") > 0))
      throw UsageError(fmt::format("--{} applies to --pinv iterative only, not to --pinv svd",
                                   app.count("--pinv-iterations") > 0 ? "pinv-iterations" : "pinv-init"));
    if (o.pinv == "iterative" && app.count("--rcond") > 0)
      throw UsageError("--rcond applies to --pinv svd only, not to --pinv iterative");
  }
  // rcond >= 1 drops every singular value (s_i < rcond * s_max for all i): an all-zero output.
  if (o.rcond >= 1) throw UsageError(fmt::format("--rcond: {} drops every singular value; give a value below 1 "
                                                 "(or a negative one for m * eps)", o.rcond));
  const bool draws_anything = o.method == "random-fourier" || o.method == "favor" ||
                              (o.method == "linformer" && o.projection == "gaussian");
  for (const char* flag : {"--draws", "--save-draws"})
    if (app.count(flag) > 0 && !draws_anything)
      throw UsageError(fmt::format("{}: --method {}{} makes no random draws", flag, o.method,
                                   o.method == "linformer" ? " with --projection segment-mean" : ""));
  if (app.count("--save-draws") > 0 && o.save_draws.empty()) throw UsageError("--save-draws: the path is empty");
}

// --save-draws must be an existing writable directory or a new one in an existing directory; it is
// created only when the run has succeeded, so a failed run leaves no empty directory behind.
void check_save_draws_path(const fs::path& dir) {
  try {
    if (fs::exists(dir)) {
      ensure_writable_directory(dir);
    } else {
      const fs::path parent = dir.has_parent_path() ? dir.parent_path() : fs::path(".");
      if (!fs::is_directory(parent))
        throw UsageError(fmt::format("--save-draws: {} is not an existing directory", parent.string()));
      ensure_writable_directory(parent);
    }
  } catch (const OutputError& e) {
    throw UsageError(fmt::format("--save-draws: {}", e.what()));
  }
}

// The memory a run needs at its peak, estimated before anything large is allocated: the three inputs and
// the output (as double while read, then as T), the method's draws (E and F, or omega: AttentionMethod's
// draw_bytes, from --proj or --features), and per worker thread the method's workspace for one head
// (AttentionMethod's cost, from its parameters: the n_q x n_k matrix of exact attention's reference kernel,
// Linformer's n x k scores, Nystrom's m x m and n x m blocks, the features' n x D matrices).
struct MemoryNeed {
  double bytes = 0;
  double per_thread = 0;  // one head's workspace, held by each worker at once
  double draws = 0;
};

template <typename T>
MemoryNeed estimate_memory(const AttentionMethod& method, Impl impl, const MethodParams& params, const HeadStack<T>& q,
                           const HeadStack<T>& k, const HeadStack<T>& v, int threads) {
  const double heads = static_cast<double>(q.count());
  const double n_q = static_cast<double>(q.n()), n_k = static_cast<double>(k.n());
  const double d = static_cast<double>(q.d()), d_v = static_cast<double>(v.d());
  const long long n = std::max(q.n(), k.n()), width = std::max(q.d(), v.d());
  MemoryNeed need;
  const double io = heads * (n_q * d + n_k * d + n_k * d_v + n_q * d_v) * sizeof(T);
  const double workers = std::min(static_cast<double>(threads), heads);
  if (method.name == "exact" && impl == Impl::fast)
    need.per_thread = streaming_attention_cost(n, width, params.key_block, sizeof(T)).workspace_bytes;  // fused: key blocks
  else if (method.name == "exact")
    need.per_thread = n_q * n_k * sizeof(T);
  else
    need.per_thread = method.cost(params, n, width, sizeof(T)).workspace_bytes;
  if (method.draw_bytes) need.draws = method.draw_bytes(params, k.n(), q.d(), sizeof(T));
  need.bytes = io + need.draws + workers * need.per_thread;
  return need;
}

// A device node, FIFO or symbolic link at --out is refused, never replaced (see check_output_file).
void check_output_path(const fs::path& out) {
  if (out.empty()) throw UsageError("--out: the path is empty; name an .npy file");
  if (fs::is_directory(out)) throw UsageError(fmt::format("--out: {} is a directory", out.string()));
  try {
    check_output_target(out);
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
  if (!o.save_draws.empty()) check_save_draws_path(o.save_draws);
  // Workers over heads: no more threads than heads (the output is the same for any count), and no more
  // than whose stacks fit, or the OpenMP runtime would stop the process with a message of its own.
  const int workers = static_cast<int>(std::min<Eigen::Index>(o.threads > 0 ? o.threads : omp_get_num_procs(), q.stack.count()));
  if (const std::string problem = thread_memory_problem(workers); !problem.empty()) throw UsageError("--threads: " + problem);
  omp_set_num_threads(workers);
  const Eigen::Index n_q = q.stack.n(), n_k = k.stack.n(), d = q.stack.d();

  const AttentionMethod& method = attention_method(o.method);
  const Impl impl = o.impl == to_string(Impl::fast) ? Impl::fast : Impl::reference;
  MethodParams params;
  params.key_block = o.block;
  // Linformer's k and the features' D as the draws below will make them (--draws may replace them with
  // its own, checked to agree), so that the memory check counts them.
  if (method.name == "linformer") params.projected = reduced_size("--proj", o.proj, n_k, "n");
  params.share_kv = o.share_kv;
  params.features = o.features.value_or(kDefaultFeatures);
  params.temperature = o.temperature.value_or(0);
  params.iid = o.iid;
  if (method.name == "nystrom") params.nystrom = nystrom_options(o, n_q, n_k);
  if (impl == Impl::fast && !fast_kernel_applies(method, params)) {
    if (!method.has_fast())
      throw UsageError(fmt::format("--impl fast: {} has no fast kernel; use --impl reference", method.name));
    throw UsageError(fmt::format("--impl fast: the fast nystrom kernel takes --pinv iterative --pinv-iterations {} "
                                 "--pinv-init {} only; use --impl reference",
                                 kNystromformerPinvIterations, to_string(PinvInit::per_matrix)));
  }
  const MemoryNeed need = estimate_memory(method, impl, params, q.stack, k.stack, v.stack, workers);
  const std::string at = method.name == "linformer"  ? fmt::format(" at k = {}", params.projected)
                         : method.draw_bytes != nullptr ? fmt::format(" at D = {}", params.features)
                         : method.name == "nystrom"   ? fmt::format(" at m = {} landmarks", params.nystrom.landmarks)
                                                      : "";
  if (const double avail = available_memory(); need.bytes > avail)
    throw UsageError(fmt::format(
        "--method {} needs about {} here (inputs and output{}, {} per worker thread for one head's workspace{}), {} available{}",
        o.method, gib_text(need.bytes), need.draws > 0 ? fmt::format(", {} of draws", gib_text(need.draws)) : "",
        gib_text(need.per_thread), at, gib_text(avail),
        o.method == "exact" ? "; --method streaming computes the same attention in O(n) memory, --threads 1 holds one matrix"
                            : ""));
  current_need = need.bytes;
  Draws draws;
  if (method.name == "linformer") {
    if (n_k != n_q) k.refuse(fmt::format("linformer needs as many keys as queries: n = {} but --q has n = {}", n_k, n_q));
    draws = linformer_draws(o, params, n_k);
  } else if (method.random) {
    draws = feature_draws(o, params, d);
  }
  const HeadStack<T> out = run_attention(method, impl, q.stack, k.stack, v.stack, params, draws);
  check_finite(out, o.method);

  if (!o.save_draws.empty()) {
    try {
      fs::create_directories(o.save_draws);
    } catch (const fs::filesystem_error& e) {
      throw UsageError(fmt::format("--save-draws: cannot create {}: {}", o.save_draws.string(), e.code().message()));
    }
    save_draws(o.save_draws, draws);
  }
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
  app.formatter(std::make_shared<PlainHelpFormatter>());
  add_options(app, o);
  if (const auto status = parse_command_line(app, argc, argv)) return *status;
  try {
    check_option_use(app, o);
  } catch (const UsageError& e) {
    fmt::print(stderr, "{}: {}\n", kName, e.what());
    return kExitUsage;
  }
  // Heads run in parallel (run() sets the thread count); Eigen's own threading would change summation
  // order with --threads.
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
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "{}: out of memory during --method {} (estimated need {}, {} available at the start)\n", kName,
               o.method, gib_text(current_need), gib_text(available_memory()));
    return kExitFailure;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: {}\n", kName, e.what());
    return kExitFailure;
  }
}

}  // namespace attend
