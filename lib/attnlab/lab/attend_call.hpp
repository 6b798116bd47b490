// One call of attend, the pieces that do not touch files: its options (the flags of build/bin/attend and the
// keywords of the Python module's attnlab.attend, defined once here), their checks, the method's parameters
// and draws for the inputs' shapes, the memory estimate, the output's finiteness. Every refusal is one line in
// attend's words; attend prints it after "attend: ", the Python module raises it as a ValueError.
//
//   AttendOptions o;
//   add_attend_options(app, o, AttendFlags::program);       // parse with CLI11, then
//   check_attend_options(o, [&](const std::string& f) { return app.count(f) > 0; });
//   check_attend_shapes(q, k, v);                           // AttendInput: label and (batch, heads, n, d)
//   const AttendPlan plan = plan_attend(o, q, k, source);   // method, parameters, draws
#pragma once

#include <CLI/CLI.hpp>
#include <Eigen/Core>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

#include "attnlab/attention/registry.hpp"
#include "attnlab/attention/streaming_attention.hpp"
#include "attnlab/core/head_stack.hpp"
#include "attnlab/lab/experiment_cli.hpp"

namespace attnlab {

// Bad input found after parsing (a shape, a size out of range, an option the method does not use, a size
// that cannot fit in memory): attend's exit status 2, like a bad flag.
struct AttendUsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The run failed on good input (a non-finite output): attend's exit status 1.
struct AttendFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Linformer's k and Nystrom's m when not given: the UCU report's m, capped at the number of keys.
inline constexpr Eigen::Index kAttendDefaultReducedSize = 64;

// attend's options with the defaults its --help shows (the files are the program's alone).
struct AttendOptions {
  std::filesystem::path q, k, v, out, save_draws, draws;
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

// Which options: the program's (every flag, --q, --k, --v, --out, --dtype, --draws and --save-draws among them),
// or those of a call on arrays already in memory (the Python module: no files, and the precision is the arrays').
enum class AttendFlags { program, arrays };

// Adds attend's options to `app`, bound to `o`, each with its range check, default and help text.
void add_attend_options(CLI::App& app, AttendOptions& o, AttendFlags flags);

// The footer of --help: every method of the registry with its summary, and the files of its draws.
std::string attend_methods_help();

// Whether the caller gave the flag (by its name, "--landmarks"): an option is refused only when given.
using AttendGiven = std::function<bool(const std::string& flag)>;

// Refuses (AttendUsageError) an option the method does not use (--landmarks with --method exact), pinv options
// of the other pseudoinverse, an --rcond of 1 or more, and --draws or --save-draws with a method that draws
// nothing. Options that mean something only for some methods are refused rather than ignored: a user who passes
// --landmarks with --method exact believes something that is not true. (--seed is accepted with every method,
// so one command line can loop over methods; only linformer with gaussian projections, random-fourier and favor
// draw anything.)
void check_attend_options(const AttendOptions& o, const AttendGiven& given);

// One input as a (batch, heads, n, d) stack and how messages name it: "--q: q.npy" (attend names the flag and
// the file), "--q" (the Python module: no file).
struct AttendInput {
  std::string label;
  Eigen::Index batch = 1, heads = 1, n = 0, d = 0;

  Eigen::Index count() const { return batch * heads; }
  [[noreturn]] void refuse(const std::string& problem) const;
};

// Q, K, V must agree in (batch, heads); K in d with Q; V in n with K.
void check_attend_shapes(const AttendInput& q, const AttendInput& k, const AttendInput& v);

// Draws given instead of --seed (attend's --draws DIR; the Python module's draws=): `read` returns the float64
// matrix of "E.npy", "F.npy" or "omega.npy" (or throws AttendUsageError), `name` says how a message names it,
// and `where` how it names the source ("--draws: DIR").
struct AttendDrawSource {
  std::string where;
  std::function<std::string(const char* file)> name;
  std::function<Mat<double>(const char* file)> read;
};

// The method with its kernel, parameters and draws for these inputs.
struct AttendPlan {
  const AttentionMethod* method = nullptr;
  Impl impl = Impl::reference;
  MethodParams params;
  MethodDraws draws;
};

// Resolves the sizes (--proj, --landmarks: at most n; defaults capped at it), refuses --impl fast where the method
// has no fast kernel for these options and linformer on n_q != n_k, and draws from --seed (one draw shared by every
// head) or takes the given draws, checked against the inputs. AttendUsageError for each.
AttendPlan plan_attend(const AttendOptions& o, const AttendInput& q, const AttendInput& k, const AttendDrawSource* given);

// The worker threads over heads: --threads (default: all cores), no more than the heads (the output is the same
// for any count), refused (AttendUsageError "--threads: ...") when their stacks do not fit in memory.
int attend_workers(const AttendOptions& o, Eigen::Index heads);

// The memory a run needs at its peak, estimated before anything large is allocated: the three inputs and the
// output in the computation's precision (`scalar_bytes`), the method's draws (E and F, or omega: AttentionMethod's
// draw_bytes at --proj or --features), and per worker thread the method's workspace for one head (AttentionMethod's
// cost at its parameters: the n_q x n_k matrix of exact attention's reference kernel, Linformer's n x k scores,
// Nystrom's m x m and n x m blocks, the features' n x D matrices).
struct AttendMemory {
  double bytes = 0;
  double per_thread = 0;  // one head's workspace, held by each worker at once
  double draws = 0;
  std::string parameter;  // " at k = 8192": the parameter the workspace grows with, for the message
};
AttendMemory estimate_attend_memory(const AttendOptions& o, const AttendInput& q, const AttendInput& k,
                                    const AttendInput& v, int workers, std::size_t scalar_bytes);

// The same for the gradients (the Python module's attnlab.attend_grad): Q, K, V, the output's gradient, the output and
// the three gradients, and per worker thread exact attention's two n_q x n_k matrices (P^T kept by the forward, dP^T
// formed by the backward; the fused backward of --impl fast holds none).
AttendMemory estimate_attend_grad_memory(const AttendOptions& o, const AttendInput& q, const AttendInput& k,
                                         const AttendInput& v, int workers, std::size_t scalar_bytes);

// AttendUsageError when `need` exceeds available_memory(), saying how much it needs and has, and for exact
// attention pointing at --method streaming (the same attention in O(n) memory) and --threads 1. A need below
// kAttendUncheckedBytes is not checked (attend_call.cpp says why).
inline constexpr double kAttendUncheckedBytes = 16.0 * 1024 * 1024;
void check_attend_memory(const AttendOptions& o, const AttendMemory& need, const AttendInput& q, const AttendInput& k,
                         const std::string& dtype);

// AttendFailure naming the first NaN or infinity of the output (batch, head, row, column) and how many there are.
template <typename T>
void check_attend_output(const HeadStack<T>& out, const std::string& method);
// The same for an output written in C order: `count` heads (`heads` per batch) of n x d, head h's row-major block at
// out + h n d; the same message.
template <typename T>
void check_attend_output_c_order(const T* out, Eigen::Index count, Eigen::Index heads, Eigen::Index n, Eigen::Index d,
                                 const std::string& method);

}  // namespace attnlab
