// One call of attend: options, checks, plan, memory, output (attend_call.hpp).
#include "attnlab/lab/attend_call.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <omp.h>
#include <vector>

#include "attnlab/core/finite.hpp"
#include "attnlab/io/memory_budget.hpp"
#include "attnlab/lab/cli_validators.hpp"

namespace attnlab {

namespace {

constexpr Eigen::Index kDefaultFeatures = MethodParams{}.features;

// A size flag in [1, limit]: the given value, else min(default, limit).
Eigen::Index reduced_size(const char* flag, const std::optional<Eigen::Index>& given, Eigen::Index limit,
                          const char* limit_name) {
  if (!given) return std::min(kAttendDefaultReducedSize, limit);
  if (*given > limit) throw AttendUsageError(fmt::format("{} (= {}) exceeds {} = {}", flag, *given, limit_name, limit));
  return *given;
}

MethodDraws linformer_draws(const AttendOptions& o, MethodParams& params, Eigen::Index n, const AttendDrawSource* given) {
  if (given) {
    LinformerProjections<double> p{given->read("E.npy"), given->read("F.npy")};
    if (p.e.cols() != n || p.f.rows() != p.e.rows() || p.f.cols() != n)
      throw AttendUsageError(fmt::format("{}: E is {} x {} and F {} x {}; both must be k x n with n = {}", given->where,
                                         p.e.rows(), p.e.cols(), p.f.rows(), p.f.cols(), n));
    if (o.proj && *o.proj != p.k())
      throw AttendUsageError(fmt::format("--proj (= {}) differs from the k = {} rows of {}", *o.proj, p.k(), given->name("E.npy")));
    params.projected = p.k();
    return {p, {}};
  }
  params.projected = reduced_size("--proj", o.proj, n, "n");
  params.segment_mean_projection = o.projection == "segment-mean";
  params.share_kv = o.share_kv;
  Rng rng(o.seed);
  return attention_method("linformer").draw(params, n, 0, rng);
}

MethodDraws feature_draws(const AttendOptions& o, MethodParams& params, Eigen::Index d, const AttendDrawSource* given) {
  if (given) {
    const Mat<double> w = given->read("omega.npy");
    if (w.cols() != d)
      throw AttendUsageError(fmt::format("--draws: {}: omega is {} x {} but the inputs have d = {}", given->name("omega.npy"),
                                         w.rows(), w.cols(), d));
    if (o.features && *o.features != w.rows())
      throw AttendUsageError(fmt::format("--features (= {}) differs from the {} rows of {}", *o.features, w.rows(),
                                         given->name("omega.npy")));
    // stddev and orthogonal describe how w was drawn; the attention uses w alone.
    params.features = w.rows();
    return {{}, RandomFeatureDraw{w, 1.0, false}};
  }
  params.features = o.features.value_or(kDefaultFeatures);
  Rng rng(o.seed);
  return attention_method(o.method).draw(params, 0, d, rng);
}

NystromOptions nystrom_options(const AttendOptions& o, Eigen::Index n_q, Eigen::Index n_k) {
  NystromOptions opt;
  opt.landmarks = reduced_size("--landmarks", o.landmarks, std::min(n_q, n_k), "min(n_q, n_k)");
  opt.pinv = o.pinv == "svd" ? PinvMethod::svd : PinvMethod::iterative;
  opt.iterations = o.pinv_iterations;
  for (PinvInit i : pinv_inits())
    if (to_string(i) == o.pinv_init) opt.init = i;
  opt.rcond = o.rcond;
  return opt;
}

}  // namespace

std::string attend_methods_help() {
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

void add_attend_options(CLI::App& app, AttendOptions& o, AttendFlags flags) {
  const bool program = flags == AttendFlags::program;
  // Validators are built here, not at namespace scope: CLI11 keeps global validators of its own
  // whose initialisation order relative to ours is unspecified.
  const CLI::Validator count = integer_in(1, 1 << 30);
  const CLI::Validator positive(
      [](std::string& s) -> std::string {
        if (std::string why = FiniteNumber(s); !why.empty()) return why;
        return std::stod(s) > 0 ? "" : "'" + s + "' is not positive";
      },
      "POSITIVE");
  if (program) {
    app.add_option("--q", o.q, "queries, .npy")->type_name("FILE")->required()->group("Inputs and output");
    app.add_option("--k", o.k, "keys, .npy")->type_name("FILE")->required()->group("Inputs and output");
    app.add_option("--v", o.v, "values, .npy")->type_name("FILE")->required()->group("Inputs and output");
    app.add_option("--out", o.out, "output .npy file (written atomically)")->type_name("FILE")->required()->group("Inputs and output");
  }
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
  if (program)
    app.add_option("--dtype", o.dtype, "precision of the computation and the output")
        ->check(CLI::IsMember({"float", "double"}))->capture_default_str()->group("General");
  app.add_option("--threads", o.threads, "worker threads over heads, 1 to 1024 (default: all cores); output identical for any")
      ->check(integer_in(1, 1024))->group("General");
  app.add_option("--seed", o.seed, "seed of the random draws")->check(NonNegativeInteger)->capture_default_str()
      ->group("Random draws (linformer, random-fourier, favor)");
  if (program) {
    auto* save = app.add_option("--save-draws", o.save_draws, "write the draws as .npy into this directory")->type_name("DIR")
                     ->group("Random draws (linformer, random-fourier, favor)");
    app.add_option("--draws", o.draws, "use the draws in this directory (as --save-draws wrote them) instead of --seed")
        ->type_name("DIR")
        ->check(CLI::ExistingDirectory)->excludes(save)->group("Random draws (linformer, random-fourier, favor)");
  }
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
  app.footer(attend_methods_help());
}

void check_attend_options(const AttendOptions& o, const AttendGiven& given) {
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
    if (given(u.flag) && std::find(u.methods.begin(), u.methods.end(), o.method) == u.methods.end())
      throw AttendUsageError(fmt::format("{} applies to --method {} only, not to --method {}", u.flag,
                                         fmt::join(u.methods, " or "), o.method));
  if (o.method == "nystrom") {
    if (o.pinv == "svd" && (given("--pinv-iterations") || given("--pinv-init")))
      throw AttendUsageError(fmt::format("--{} applies to --pinv iterative only, not to --pinv svd",
                                         given("--pinv-iterations") ? "pinv-iterations" : "pinv-init"));
    if (o.pinv == "iterative" && given("--rcond"))
      throw AttendUsageError("--rcond applies to --pinv svd only, not to --pinv iterative");
  }
  // rcond >= 1 drops every singular value (s_i < rcond * s_max for all i): an all-zero output.
  if (o.rcond >= 1) throw AttendUsageError(fmt::format("--rcond: {} drops every singular value; give a value below 1 "
                                                       "(or a negative one for m * eps)", o.rcond));
  const bool draws_anything = o.method == "random-fourier" || o.method == "favor" ||
                              (o.method == "linformer" && o.projection == "gaussian");
  for (const char* flag : {"--draws", "--save-draws"})
    if (given(flag) && !draws_anything)
      throw AttendUsageError(fmt::format("{}: --method {}{} makes no random draws", flag, o.method,
                                         o.method == "linformer" ? " with --projection segment-mean" : ""));
}

void AttendInput::refuse(const std::string& problem) const { throw AttendUsageError(fmt::format("{}: {}", label, problem)); }

void check_attend_shapes(const AttendInput& q, const AttendInput& k, const AttendInput& v) {
  for (const AttendInput* in : {&k, &v})
    if (in->batch != q.batch || in->heads != q.heads)
      in->refuse(fmt::format("(batch, heads) = ({}, {}) but --q has ({}, {})", in->batch, in->heads, q.batch, q.heads));
  if (k.d != q.d) k.refuse(fmt::format("d = {} but --q has d = {}", k.d, q.d));
  if (v.n != k.n) v.refuse(fmt::format("n = {} rows but --k has n = {}", v.n, k.n));
}

AttendPlan plan_attend(const AttendOptions& o, const AttendInput& q, const AttendInput& k, const AttendDrawSource* given) {
  const Eigen::Index n_q = q.n, n_k = k.n, d = q.d;
  AttendPlan plan;
  plan.method = &attention_method(o.method);
  const AttentionMethod& method = *plan.method;
  plan.impl = o.impl == to_string(Impl::fast) ? Impl::fast : Impl::reference;
  MethodParams& params = plan.params;
  params.key_block = o.block;
  params.temperature = o.temperature.value_or(0);
  params.iid = o.iid;
  if (method.name == "nystrom") params.nystrom = nystrom_options(o, n_q, n_k);
  if (plan.impl == Impl::fast && !fast_kernel_applies(method, params)) {
    if (!method.has_fast())
      throw AttendUsageError(fmt::format("--impl fast: {} has no fast kernel; use --impl reference", method.name));
    throw AttendUsageError(fmt::format("--impl fast: the fast nystrom kernel takes --pinv iterative --pinv-iterations {} "
                                       "--pinv-init {} only; use --impl reference",
                                       kNystromformerPinvIterations, to_string(PinvInit::per_matrix)));
  }
  if (method.name == "linformer") {
    if (n_k != n_q) k.refuse(fmt::format("linformer needs as many keys as queries: n = {} but --q has n = {}", n_k, n_q));
    plan.draws = linformer_draws(o, params, n_k, given);
  } else if (method.random) {
    plan.draws = feature_draws(o, params, d, given);
  }
  return plan;
}

int attend_workers(const AttendOptions& o, Eigen::Index heads) {
  // No more threads than heads (the output is the same for any count), and no more than whose stacks fit, or the
  // OpenMP runtime would stop the process with a message of its own.
  // (The processors counted once: libgomp asks the kernel for the process's affinity at every omp_get_num_procs().)
  static const int processors = omp_get_num_procs();
  const int workers = static_cast<int>(std::min<Eigen::Index>(o.threads > 0 ? o.threads : processors, heads));
  if (const std::string problem = thread_memory_problem(workers); !problem.empty()) throw AttendUsageError("--threads: " + problem);
  return workers;
}

AttendMemory estimate_attend_memory(const AttendOptions& o, const AttendInput& q, const AttendInput& k,
                                    const AttendInput& v, int workers, std::size_t scalar_bytes) {
  const AttentionMethod& method = attention_method(o.method);
  const bool fast = o.impl == to_string(Impl::fast);
  const double heads = static_cast<double>(q.count());
  const double n_q = static_cast<double>(q.n), n_k = static_cast<double>(k.n);
  const double d = static_cast<double>(q.d), d_v = static_cast<double>(v.d);
  const double bytes = static_cast<double>(scalar_bytes);
  const Eigen::Index n = std::max(q.n, k.n), width = std::max(q.d, v.d);
  // The method's parameters as plan_attend will resolve them (given draws replace k or D with their own, checked
  // there to agree with --proj and --features), so that the estimate counts what the parameters cost.
  MethodParams params;
  params.key_block = o.block;
  if (method.name == "linformer") params.projected = reduced_size("--proj", o.proj, k.n, "n");
  params.share_kv = o.share_kv;
  params.features = o.features.value_or(kDefaultFeatures);
  if (method.name == "nystrom") params.nystrom = nystrom_options(o, q.n, k.n);
  AttendMemory need;
  const double io = heads * (n_q * d + n_k * d + n_k * d_v + n_q * d_v) * bytes;
  const double threads = std::min(static_cast<double>(workers), heads);
  if (method.name == "exact" && fast)
    need.per_thread = streaming_attention_cost(n, width, params.key_block, scalar_bytes).workspace_bytes;  // key blocks
  else if (method.name == "exact")
    need.per_thread = n_q * n_k * bytes;
  else
    need.per_thread = method.cost(params, n, width, scalar_bytes).workspace_bytes;
  if (method.draw_bytes) need.draws = method.draw_bytes(params, k.n, q.d, scalar_bytes);
  need.parameter = method.name == "linformer"     ? fmt::format(" at k = {}", params.projected)
                   : method.draw_bytes != nullptr ? fmt::format(" at D = {}", params.features)
                   : method.name == "nystrom"     ? fmt::format(" at m = {} landmarks", params.nystrom.landmarks)
                                                  : "";
  need.bytes = io + need.draws + threads * need.per_thread;
  return need;
}

AttendMemory estimate_attend_grad_memory(const AttendOptions& o, const AttendInput& q, const AttendInput& k,
                                         const AttendInput& v, int workers, std::size_t scalar_bytes) {
  // Twice the forward's: the gradients beside the inputs and output, and per worker the backward's workspace beside
  // the forward's (exact attention's P^T kept, dP^T formed); the draws are held once.
  AttendMemory need = estimate_attend_memory(o, q, k, v, workers, scalar_bytes);
  need.bytes = 2 * (need.bytes - need.draws) + need.draws;
  need.per_thread *= 2;
  return need;
}

void check_attend_memory(const AttendOptions& o, const AttendMemory& need, const AttendInput& q, const AttendInput& k,
                         const std::string& dtype) {
  // Below kAttendUncheckedBytes the estimate is not set against the memory left: reading it (/proc/meminfo) costs tens
  // of microseconds, more than a small call's whole work, and a process with less than that left cannot run at all
  // (an allocation that fails anyway is reported as out of memory, never an abort).
  if (need.bytes < kAttendUncheckedBytes) return;
  if (const double avail = available_memory(); need.bytes > avail)
    throw AttendUsageError(fmt::format(
        "--method {} needs about {} here (inputs and output{}, {} per worker thread for one head's workspace{}{}), {} "
        "available{}",
        o.method, gib_text(need.bytes), need.draws > 0 ? fmt::format(", {} of draws", gib_text(need.draws)) : "",
        gib_text(need.per_thread),
        o.method == "exact" && o.impl != to_string(Impl::fast)
            ? fmt::format(": an n_q x n_k = {} x {} {} matrix", q.n, k.n, dtype)
            : "",
        need.parameter, gib_text(avail),
        o.method == "exact" ? "; --method streaming computes the same attention in O(n) memory, --threads 1 holds one matrix"
                            : ""));
}

namespace {

// check_attend_output's message for `count` heads of n x d (`heads` per batch), entry (i, j) of head h at(h, i, j),
// once the quick pass found one that is not finite: the first in head, column, row order, and how many.
template <typename At>
void refuse_nonfinite_output(Eigen::Index count, Eigen::Index heads, Eigen::Index n, Eigen::Index d, At at, const std::string& method) {
  std::size_t bad = 0;
  std::string first;
  for (Eigen::Index h = 0; h < count; ++h)
    for (Eigen::Index j = 0; j < d; ++j)
      for (Eigen::Index i = 0; i < n; ++i)
        if (!std::isfinite(at(h, i, j)) && bad++ == 0)
          first = fmt::format("batch {}, head {}, row {}, column {}", h / heads, h % heads, i, j);
  if (bad > 0)
    throw AttendFailure(fmt::format("{} gave {} non-finite output values (the first at {}); nothing written", method, bad, first));
}

}  // namespace

template <typename T>
void check_attend_output(const HeadStack<T>& out, const std::string& method) {
  bool finite = true;
  for (Eigen::Index h = 0; h < out.count(); ++h) finite = finite && all_finite(out[h].data(), static_cast<std::size_t>(out[h].size()));
  if (finite) return;
  refuse_nonfinite_output(out.count(), out.heads(), out.n(), out.d(), [&](Eigen::Index h, Eigen::Index i, Eigen::Index j) { return out[h](i, j); },
                          method);
}

template <typename T>
void check_attend_output_c_order(const T* out, Eigen::Index count, Eigen::Index heads, Eigen::Index n, Eigen::Index d,
                                 const std::string& method) {
  if (all_finite(out, static_cast<std::size_t>(count * n * d))) return;
  refuse_nonfinite_output(count, heads, n, d, [&](Eigen::Index h, Eigen::Index i, Eigen::Index j) { return out[(h * n + i) * d + j]; },
                          method);
}

template void check_attend_output_c_order(const float*, Eigen::Index, Eigen::Index, Eigen::Index, Eigen::Index, const std::string&);
template void check_attend_output_c_order(const double*, Eigen::Index, Eigen::Index, Eigen::Index, Eigen::Index, const std::string&);
template void check_attend_output(const HeadStack<float>&, const std::string&);
template void check_attend_output(const HeadStack<double>&, const std::string&);

}  // namespace attnlab
