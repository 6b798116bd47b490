// attend: one attention method of the library on the user's .npy inputs, the output written as .npy.
#include <CLI/CLI.hpp>
#include <Eigen/Core>
#include <filesystem>
#include <fmt/format.h>
#include <new>
#include <omp.h>
#include <string>

#include "attnlab/io/atomic_file.hpp"
#include "attnlab/io/memory_budget.hpp"
#include "attnlab/io/npy.hpp"
#include "attnlab/lab/attend_call.hpp"
#include "attnlab/lab/cli_validators.hpp"
#include "attnlab/lab/experiment_cli.hpp"

namespace attend {  // compiled beside other programs, linked alone (CMakeLists.txt: attnlab_programs)

namespace {

using namespace attnlab;
namespace fs = std::filesystem;

constexpr const char* kName = "attend";

// The options, their checks, the method's plan, the memory estimate and the output's check live in the library
// (lab/attend_call.hpp), shared with the Python module; what is here is the program's own: its files.
using Options = AttendOptions;
using UsageError = AttendUsageError;

// The run's estimated peak memory, kept for the message should an allocation fail anyway.
double current_need = 0;

// One input read as a (batch, heads, n, d) stack; `dims` is the file's number of axes.
template <typename T>
struct Input {
  AttendInput shape;
  HeadStack<T> stack;
  std::size_t dims = 0;
};

template <typename T>
Input<T> read_input(const char* flag, const fs::path& path) {
  try {
    const NpyArray array = read_npy(path);
    HeadStack<T> stack = head_stack_from_npy<T>(array, path.string());
    AttendInput shape{fmt::format("{}: {}", flag, path.string()), stack.batch(), stack.heads(), stack.n(), stack.d()};
    if (stack.n() < 1 || stack.d() < 1)
      shape.refuse(fmt::format("has n = {} rows of d = {} columns; both must be at least 1", stack.n(), stack.d()));
    return {std::move(shape), std::move(stack), array.dims()};
  } catch (const NpyError& e) {
    throw UsageError(fmt::format("{}: {}", flag, e.what()));
  }
}

// --draws DIR: E.npy, F.npy and omega.npy read from the directory, named by their paths.
AttendDrawSource draws_directory(const fs::path& dir) {
  return {fmt::format("--draws: {}", dir.string()), [dir](const char* file) { return (dir / file).string(); },
          [dir](const char* file) {
            try {
              return read_npy_matrix<double>(dir / file);
            } catch (const NpyError& e) {
              throw UsageError(fmt::format("--draws: {}", e.what()));
            }
          }};
}

void save_draws(const fs::path& dir, const MethodDraws& draws) {
  if (draws.projections) {
    write_npy(dir / "E.npy", to_npy(draws.projections->e));
    write_npy(dir / "F.npy", to_npy(draws.projections->f));
  }
  if (draws.features) write_npy(dir / "omega.npy", to_npy(Mat<double>(draws.features->w)));
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

// --out must name a file in an existing, writable directory; checked before any work. A device node, FIFO or
// symbolic link at --out is refused, never replaced (see check_output_file).
void check_output_path(const fs::path& out) {
  if (out.empty()) throw UsageError("--out: the path is empty; name an .npy file");
  if (fs::is_directory(out)) throw UsageError(fmt::format("--out: {} is a directory", out.string()));
  try {
    check_output_target(out);
  } catch (const OutputError& e) {
    throw UsageError(fmt::format("--out: {}", e.what()));
  }
}

template <typename T>
int run(const Options& o) {
  check_output_path(o.out);
  const Input<T> q = read_input<T>("--q", o.q), k = read_input<T>("--k", o.k), v = read_input<T>("--v", o.v);
  check_attend_shapes(q.shape, k.shape, v.shape);
  if (!o.save_draws.empty()) check_save_draws_path(o.save_draws);
  const int workers = attend_workers(o, q.stack.count());
  omp_set_num_threads(workers);
  const AttendMemory need = estimate_attend_memory(o, q.shape, k.shape, v.shape, workers, sizeof(T));
  check_attend_memory(o, need, q.shape, k.shape, o.dtype);
  current_need = need.bytes;

  const AttendDrawSource given = draws_directory(o.draws);
  const AttendPlan plan = plan_attend(o, q.shape, k.shape, o.draws.empty() ? nullptr : &given);
  const HeadStack<T> out = run_attention(*plan.method, plan.impl, q.stack, k.stack, v.stack, plan.params, plan.draws);
  check_attend_output(out, o.method);

  if (!o.save_draws.empty()) {
    try {
      fs::create_directories(o.save_draws);
    } catch (const fs::filesystem_error& e) {
      throw UsageError(fmt::format("--save-draws: cannot create {}: {}", o.save_draws.string(), e.code().message()));
    }
    save_draws(o.save_draws, plan.draws);
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
  add_attend_options(app, o, AttendFlags::program);
  if (const auto status = parse_command_line(app, argc, argv)) return *status;
  try {
    check_attend_options(o, [&](const std::string& flag) { return app.count(flag) > 0; });
    if (app.count("--save-draws") > 0 && o.save_draws.empty()) throw UsageError("--save-draws: the path is empty");
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
