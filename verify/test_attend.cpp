// bin/attend against the library: every method's output equals the library call on the same inputs,
// saved draws reproduce the output, and bad input gives exit status 2 with one line.
#include <doctest/doctest.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "attnlab/attention/fused_attention.hpp"
#include "attnlab/attention/linear_attention.hpp"
#include "attnlab/attention/linformer.hpp"
#include "attnlab/io/npy.hpp"
#include "attnlab/attention/nystrom.hpp"
#include "attnlab/attention/random_features.hpp"
#include "attnlab/attention/softmax_attention.hpp"
#include "attnlab/attention/streaming_attention.hpp"
#include "attnlab/lab/subprocess.hpp"
#include "support.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <unistd.h>

using namespace attnlab;
using attnlab::testing::read_text;
using attnlab::testing::run_binary;
using attnlab::testing::ScratchDir;
namespace fs = std::filesystem;

namespace {

const std::uint64_t kAttendSeed = attnlab::testing::test_seed(42);  // ATTNLAB_TEST_SEED overrides it

constexpr Eigen::Index kN = 24, kD = 8, kDv = 5;

// Q, K, V written as float64 files: (n, d) when `heads` is 0, else (2, heads, n, d).
struct Inputs {
  ScratchDir dir;
  HeadStack<double> q, k, v;
  std::vector<std::string> args;  // --q --k --v

  explicit Inputs(Eigen::Index heads) {
    Rng rng(attnlab::testing::test_seed(7));
    const Eigen::Index b = heads == 0 ? 1 : 2, h = heads == 0 ? 1 : heads;
    q = HeadStack<double>(b, h, kN, kD), k = q, v = HeadStack<double>(b, h, kN, kDv);
    for (HeadStack<double>* s : {&q, &k, &v})
      for (Eigen::Index i = 0; i < s->count(); ++i) (*s)[i] = gaussian_matrix(s->n(), s->d(), rng);
    using Named = std::pair<const char*, HeadStack<double>*>;
    for (auto [flag, s] : {Named{"--q", &q}, Named{"--k", &k}, Named{"--v", &v}}) {
      const fs::path file = dir.path() / (std::string(flag + 2) + ".npy");
      NpyArray a = to_npy(*s);
      if (heads == 0) a.shape.erase(a.shape.begin(), a.shape.begin() + 2);
      write_npy(file, a);
      args.insert(args.end(), {flag, file.string()});
    }
  }
};

// Eigen's GEMM splits its blocking by thread count; attend runs it on one thread, so must the reference.
struct OneEigenThread {
  int saved = Eigen::nbThreads();
  OneEigenThread() { Eigen::setNbThreads(1); }
  ~OneEigenThread() { Eigen::setNbThreads(saved); }
};

template <typename T>
using Reference = std::function<HeadStack<T>(const HeadStack<T>&, const HeadStack<T>&, const HeadStack<T>&)>;

// The library calls attend must make for each method with the flags below (seed kAttendSeed).
template <typename T>
std::vector<std::pair<std::vector<std::string>, Reference<T>>> method_cases() {
  using S = HeadStack<T>;
  const double tau = std::sqrt(static_cast<double>(kD));
  return {
      {{"--method", "exact"}, [](const S& q, const S& k, const S& v) { return softmax_attention(q, k, v); }},
      {{"--method", "streaming", "--block", "5"},
       [](const S& q, const S& k, const S& v) { return streaming_attention(q, k, v, 5); }},
      {{"--method", "linear-shen"}, [](const S& q, const S& k, const S& v) { return efficient_attention(q, k, v); }},
      {{"--method", "linear-elu"}, [](const S& q, const S& k, const S& v) { return elu_linear_attention(q, k, v); }},
      {{"--method", "linformer", "--proj", "6"},
       [](const S& q, const S& k, const S& v) {
         Rng rng(kAttendSeed);
         return linformer_attention(q, k, v, gaussian_projections(kN, 6, ProjectionSharing::separate, rng).cast<T>());
       }},
      {{"--method", "linformer", "--projection", "segment-mean"},  // default k: min(64, n) = n
       [](const S& q, const S& k, const S& v) {
         return linformer_attention(q, k, v, segment_mean_projections(kN, kN).cast<T>());
       }},
      {{"--method", "random-fourier", "--features", "16"},
       [tau](const S& q, const S& k, const S& v) {
         Rng rng(kAttendSeed);
         return random_fourier_attention(q, k, v, draw_fourier_features(kD, 16, 1 / std::sqrt(tau), rng), tau);
       }},
      {{"--method", "favor", "--features", "20"},
       [](const S& q, const S& k, const S& v) {
         Rng rng(kAttendSeed);
         return favor_attention(q, k, v, draw_favor_features(kD, 20, true, rng));
       }},
      {{"--method", "nystrom", "--landmarks", "5", "--pinv", "svd"},
       [](const S& q, const S& k, const S& v) {
         return nystrom_attention(q, k, v, NystromOptions{.landmarks = 5, .pinv = PinvMethod::svd});
       }},
      {{"--method", "nystrom", "--landmarks", "6", "--pinv-iterations", "9"},
       [](const S& q, const S& k, const S& v) {
         return nystrom_attention(q, k, v, NystromOptions{.landmarks = 6, .iterations = 9});
       }},
  };
}

// The fast kernels attend must call with --impl fast (each method that has one).
template <typename T>
std::vector<std::pair<std::vector<std::string>, Reference<T>>> fast_cases() {
  using S = HeadStack<T>;
  return {
      {{"--method", "exact", "--impl", "fast"}, [](const S& q, const S& k, const S& v) { return fused_attention(q, k, v); }},
      {{"--method", "streaming", "--block", "5", "--impl", "fast"},
       [](const S& q, const S& k, const S& v) { return fused_attention(q, k, v, 5); }},
      {{"--method", "linear-elu", "--impl", "fast"},
       [](const S& q, const S& k, const S& v) { return fast_elu_linear_attention(q, k, v); }},
      {{"--method", "linear-shen", "--impl", "fast"},
       [](const S& q, const S& k, const S& v) { return fast_efficient_attention(q, k, v); }},
      {{"--method", "linformer", "--proj", "6", "--impl", "fast"},
       [](const S& q, const S& k, const S& v) {
         Rng rng(kAttendSeed);
         return fast_linformer_attention(q, k, v, gaussian_projections(kN, 6, ProjectionSharing::separate, rng).cast<T>());
       }},
      {{"--method", "nystrom", "--landmarks", "6", "--impl", "fast"},
       [](const S& q, const S& k, const S& v) { return fast_nystrom_attention(q, k, v, 6); }},
  };
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

template <typename T>
bool identical(const HeadStack<T>& a, const HeadStack<T>& b) {
  if (a.batch() != b.batch() || a.heads() != b.heads() || a.n() != b.n() || a.d() != b.d()) return false;
  for (Eigen::Index i = 0; i < a.count(); ++i)
    if (!(a[i].array() == b[i].array()).all()) return false;
  return true;
}

template <typename T>
void check_methods(Eigen::Index heads, bool fast = false) {
  const OneEigenThread one;
  const Inputs in(heads);
  const HeadStack<T> q = in.q.cast<T>(), k = in.k.cast<T>(), v = in.v.cast<T>();
  const char* dtype = sizeof(T) == 4 ? "float" : "double";
  for (const auto& [flags, reference] : fast ? fast_cases<T>() : method_cases<T>()) {
    const fs::path out = in.dir.path() / "out.npy";
    for (const char* threads : {"1", "2"}) {
      INFO(flags[1] << " " << (flags.size() > 2 ? flags[2] : "") << " --dtype " << std::string(dtype) << " --threads " << std::string(threads));
      const auto r = run_binary("attend", concat(in.args, concat(flags, {"--dtype", dtype, "--threads", threads,
                                                                         "--seed", std::to_string(kAttendSeed), "--out",
                                                                         out.string()})));
      REQUIRE(r.exit_status == 0);
      CHECK(r.output.empty());
      // The output keeps Q's axes and is stored in --dtype.
      const NpyArray file = read_npy(out);
      CHECK(file.dims() == (heads == 0 ? 2u : 4u));
      CHECK(file.dtype == (sizeof(T) == 4 ? NpyDtype::float32 : NpyDtype::float64));
      // attend calls the same library function on the same values (float64 files cast to T, as
      // HeadStack::cast does), so the results agree bit for bit: any difference is a plumbing bug,
      // not rounding, and no tolerance is needed. Heads are independent, so --threads cannot matter.
      CHECK(identical(head_stack_from_npy<T>(file, out.string()), reference(q, k, v)));
    }
  }
}

// The draws written by --save-draws, read back with --draws (and a different --seed), give the same output.
void check_draws_round_trip(Eigen::Index heads, const std::vector<std::string>& method,
                            const std::vector<std::string>& files, const char* dtype) {
  const Inputs in(heads);
  const fs::path saved = in.dir.path() / "draws", out1 = in.dir.path() / "one.npy", out2 = in.dir.path() / "two.npy";
  INFO(method[1] << " --dtype " << std::string(dtype));
  const auto args = concat(in.args, concat(method, {"--dtype", dtype}));
  REQUIRE(run_binary("attend", concat(args, {"--save-draws", saved.string(), "--out", out1.string()})).exit_status == 0);
  for (const auto& f : files) CHECK(read_npy(saved / f).dtype == NpyDtype::float64);
  const auto r = run_binary("attend", concat(args, {"--draws", saved.string(), "--seed", "1", "--out", out2.string()}));
  CHECK(r.exit_status == 0);
  CHECK(read_text(out1) == read_text(out2));
  // Without the draws a different seed gives a different output: the round trip is not trivially true.
  REQUIRE(run_binary("attend", concat(args, {"--seed", "1", "--out", out2.string()})).exit_status == 0);
  CHECK(read_text(out1) != read_text(out2));
}

}  // namespace

TEST_CASE("attend equals the library call for every method, float and double, 2-D and 4-D") {
  check_methods<double>(0);
  check_methods<float>(0);
  check_methods<double>(3);
  check_methods<float>(3);
}

TEST_CASE("attend --impl fast equals the fast kernel call for every method that has one") {
  check_methods<double>(0, true);
  check_methods<float>(3, true);
}

TEST_CASE("attend --save-draws writes the draws the library made, and --draws reproduces the output") {
  for (const char* dtype : {"float", "double"}) {
    check_draws_round_trip(0, {"--method", "linformer", "--proj", "7"}, {"E.npy", "F.npy"}, dtype);
    check_draws_round_trip(3, {"--method", "random-fourier", "--features", "12"}, {"omega.npy"}, dtype);
    check_draws_round_trip(0, {"--method", "favor", "--features", "12", "--iid"}, {"omega.npy"}, dtype);
  }
  // The saved matrices are the library's draws for the seed, in float64.
  const Inputs in(0);
  const fs::path saved = in.dir.path() / "draws";
  REQUIRE(run_binary("attend", concat(in.args, {"--method", "linformer", "--proj", "7", "--share-kv", "--seed", "5",
                                                "--save-draws", saved.string(), "--out",
                                                (in.dir.path() / "o.npy").string()}))
              .exit_status == 0);
  Rng rng(5);
  const auto p = gaussian_projections(kN, 7, ProjectionSharing::shared, rng);
  CHECK(read_npy_matrix<double>(saved / "E.npy") == p.e);
  CHECK(read_npy_matrix<double>(saved / "F.npy") == p.f);
}

// A 128-byte .npy header of shape (1, 300000000, 0, 8): no data, but a stack of 3e8 empty heads if
// allocated before n >= 1 is checked (issue 18: 7 GB and 96 s, or std::bad_alloc).
std::string write_empty_stack(const fs::path& path) {
  NpyArray a;
  a.shape = {1, 300000000, 0, 8};
  a.dtype = NpyDtype::float64;
  write_npy(path, a);
  return path.string();
}

TEST_CASE("attend refuses bad input with exit status 2, one line naming the problem, and no output") {
  const Inputs in(0), stack(3);
  const fs::path dir = in.dir.path();
  const std::string out = (dir / "out.npy").string();
  // Inputs that are wrong in shape: d differs, n differs, 1-D, other (batch, heads), a text file.
  const auto write = [&](const char* name, const Mat<double>& m) {
    write_npy(dir / name, to_npy(m));
    return (dir / name).string();
  };
  const std::string d_wrong = write("d_wrong.npy", Mat<double>::Ones(kN, kD + 1));
  const std::string n_wrong = write("n_wrong.npy", Mat<double>::Ones(kN + 1, kDv));
  const std::string keys_long = write("keys_long.npy", Mat<double>::Ones(kN + 1, kD));
  write_npy(dir / "vector.npy", to_npy(Vec<double>(Vec<double>::Ones(kN))));
  std::ofstream(dir / "text.npy") << "not an array\n";
  fs::create_directories(dir / "draws_bad");
  write_npy(dir / "draws_bad" / "E.npy", to_npy(Mat<double>(Mat<double>::Ones(4, kN + 1))));
  write_npy(dir / "draws_bad" / "F.npy", to_npy(Mat<double>(Mat<double>::Ones(4, kN + 1))));
  write_npy(dir / "draws_bad" / "omega.npy", to_npy(Mat<double>(Mat<double>::Ones(10, kD))));
  const std::string stack_k = stack.args[3];  // (2, 3, n, d)

  struct Case {
    std::vector<std::string> args;  // replacing the default --q --k --v --out where they name the same flag
    std::string names;              // what the one line must mention
  };
  const std::vector<Case> cases = {
      {{"--bogus"}, "--bogus"},
      {{"--method", "softmax"}, "valid: exact, streaming, linear-shen, linear-elu, linformer, random-fourier, favor, nystrom"},
      {{"--method", "linear_elu"}, "--method"},
      {{"--method", "linear"}, "--method"},
      {{"--impl", "blocked"}, "--impl"},
      {{"--method", "favor", "--impl", "fast"}, "--impl"},
      {{"--method", "nystrom", "--landmarks", "5", "--impl", "fast", "--pinv-iterations", "7"}, "--impl"},
      {{"--dtype", "half"}, "--dtype"},
      {{"--q", (dir / "missing.npy").string()}, "missing.npy"},
      {{"--q", (dir / "text.npy").string()}, "text.npy"},
      {{"--q", (dir / "vector.npy").string()}, "vector.npy"},
      {{"--k", d_wrong}, "d_wrong.npy"},
      {{"--v", n_wrong}, "n_wrong.npy"},
      {{"--k", stack_k}, "k.npy"},
      {{"--k", keys_long, "--v", (dir / "n_wrong.npy").string(), "--method", "linformer"}, "keys_long.npy"},
      {{"--method", "linformer", "--proj", std::to_string(kN + 1)}, "--proj"},
      {{"--method", "nystrom", "--landmarks", std::to_string(kN + 1)}, "--landmarks"},
      {{"--method", "streaming", "--block", "0"}, "--block"},
      {{"--method", "favor", "--features", "0"}, "--features"},
      {{"--method", "random-fourier", "--temperature", "-1"}, "--temperature"},
      {{"--method", "random-fourier", "--temperature", "nan"}, "--temperature"},
      {{"--method", "nystrom", "--pinv", "qr"}, "--pinv"},
      {{"--method", "nystrom", "--pinv-iterations", "-3"}, "--pinv-iterations"},
      {{"--method", "nystrom", "--pinv-init", "zero"}, "--pinv-init"},
      {{"--threads", "0"}, "--threads"},
      {{"--seed", "-1"}, "--seed"},
      {{"--out", (dir / "no_such_dir" / "out.npy").string()}, "no_such_dir"},
      {{"--out", dir.string()}, "--out"},
      {{"--out", (dir / "text.npy" / "out.npy").string()}, "--out"},
      {{"--method", "linformer", "--draws", (dir / "no_draws").string()}, "--draws"},
      {{"--method", "linformer", "--draws", dir.string()}, "E.npy"},
      {{"--method", "linformer", "--draws", (dir / "draws_bad").string()}, "draws_bad"},
      {{"--method", "favor", "--features", "11", "--draws", (dir / "draws_bad").string()}, "--features"},
      {{"--method", "favor", "--draws", dir.string(), "--save-draws", (dir / "s").string()}, "--draws"},
      {{"--method", "favor", "--save-draws", (dir / "text.npy").string()}, "--save-draws"},
      // Issue 18: an empty --out, a seed above 2^64 - 1, options meaningless for the method.
      {{"--out", ""}, "--out"},
      {{"--seed", "18446744073709551616"}, "--seed"},
      {{"--seed", "99999999999999999999999"}, "--seed"},
      {{"--method", "nystrom", "--pinv", "svd", "--rcond", "1"}, "--rcond"},
      {{"--method", "nystrom", "--pinv", "svd", "--rcond", "5"}, "--rcond"},
      {{"--method", "nystrom", "--rcond", "0.1"}, "--rcond"},
      {{"--method", "nystrom", "--pinv", "svd", "--pinv-iterations", "3"}, "--pinv-iterations"},
      {{"--method", "exact", "--landmarks", "4"}, "--landmarks"},
      {{"--method", "exact", "--block", "4"}, "--block"},
      {{"--method", "favor", "--temperature", "2"}, "--temperature"},
      {{"--method", "random-fourier", "--iid"}, "--iid"},
      {{"--method", "exact", "--save-draws", (dir / "s").string()}, "--save-draws"},
      {{"--method", "nystrom", "--draws", dir.string()}, "--draws"},
      {{"--method", "linformer", "--projection", "segment-mean", "--save-draws", (dir / "s").string()}, "--save-draws"},
      {{"--q", write_empty_stack(dir / "huge_empty.npy")}, "at least 1"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = c.args;
    using Flag = std::pair<std::string, std::string>;
    for (const auto& [flag, value] : {Flag{"--q", in.args[1]}, Flag{"--k", in.args[3]}, Flag{"--v", in.args[5]},
                                      Flag{"--out", out}})
      if (std::find(c.args.begin(), c.args.end(), flag) == c.args.end()) args.insert(args.end(), {flag, value});
    INFO("args: " << c.args[0] << " " << (c.args.size() > 1 ? c.args[1] : ""));
    const auto r = run_binary("attend", args);
    INFO("output: " << r.output);
    CHECK(r.exit_status == 2);
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
    CHECK(r.output.rfind("attend: ", 0) == 0);
    CHECK(r.output.find(c.names) != std::string::npos);
    CHECK(!fs::exists(out));
  }
  CHECK(!fs::exists(dir / "s"));
}

TEST_CASE("attend reports a non-finite output, exits 1 and writes nothing") {
  // elu(x) + 1 features of entries 1e30 overflow float: numerator and denominator become inf, their ratio NaN.
  ScratchDir dir;
  const Mat<double> big = Mat<double>::Constant(kN, kD, 1e30);
  for (const char* name : {"q.npy", "k.npy", "v.npy"}) write_npy(dir.path() / name, to_npy(big));
  const fs::path out = dir.path() / "out.npy";
  const auto r = run_binary("attend", {"--q", (dir.path() / "q.npy").string(), "--k", (dir.path() / "k.npy").string(),
                                       "--v", (dir.path() / "v.npy").string(), "--method", "linear-elu", "--dtype",
                                       "float", "--out", out.string()});
  INFO(r.output);
  CHECK(r.exit_status == 1);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  CHECK(r.output.find("non-finite") != std::string::npos);
  CHECK(!fs::exists(out));
}

TEST_CASE("attend --help lists every method and its parameters") {
  const auto r = run_binary("attend", {"--help"});
  CHECK(r.exit_status == 0);
  for (const char* word : {"exact", "streaming", "linear-shen", "linear-elu", "linformer", "random-fourier", "favor",
                           "nystrom", "--block", "--proj", "--projection", "--share-kv", "--features", "--temperature",
                           "--iid", "--landmarks", "--pinv", "--pinv-iterations", "--pinv-init", "--rcond", "--seed",
                           "--save-draws", "--draws", "--dtype", "--threads", "--impl"})
    CHECK(r.output.find(word) != std::string::npos);
}

TEST_CASE("attend never replaces a FIFO, a symbolic link or a device node at --out") {
  const Inputs in(0);
  const fs::path dir = in.dir.path();
  const fs::path fifo = dir / "fifo", target = dir / "target.npy", link = dir / "link.npy";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  std::ofstream(target) << "keep me\n";
  fs::create_symlink(target, link);
  std::vector<fs::path> outs = {fifo, link};
  // /dev/null itself when not root; as root a private character device like it (mknod c 1 3).
  const fs::path fakenull = dir / "fakenull";
  if (::geteuid() == 0 && ::mknod(fakenull.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) outs.push_back(fakenull);
  else outs.push_back("/dev/null");
  for (const fs::path& out : outs) {
    INFO("--out " << out.string());
    const auto r = run_binary("attend", concat(in.args, {"--out", out.string()}));
    INFO(r.output);
    CHECK(r.exit_status == 2);
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
    CHECK(r.output.find("not a regular file") != std::string::npos);
    CHECK(!fs::is_regular_file(fs::symlink_status(out)));
  }
  CHECK(fs::is_symlink(fs::symlink_status(link)));
  CHECK(attnlab::testing::read_text(target) == "keep me\n");
  // No temporary is left beside them.
  for (const auto& e : fs::directory_iterator(dir)) CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
}

TEST_CASE("attend refuses, before allocating it, exact attention that needs more memory than it may use" *
          doctest::skip(attnlab::testing::kAddressSanitizer)) {
  // Q, K, V of 16384 x 4 doubles (512 KiB each): exact attention needs a 16384 x 16384 double matrix
  // (2 GiB) per worker; under an address-space cap of 1 GiB the estimate must refuse it with exit 2
  // and point at streaming, instead of failing inside the allocator.
  ScratchDir dir;
  const Mat<double> x = Mat<double>::Constant(16384, 4, 0.5);
  for (const char* name : {"q.npy", "k.npy", "v.npy"}) write_npy(dir.path() / name, to_npy(x));
  const fs::path out = dir.path() / "out.npy";
  const ProcessResult r = run_process(
      "/usr/bin/prlimit", {"--as=1073741824", std::string(ATTNLAB_BIN_DIR) + "/attend", "--q",
                           (dir.path() / "q.npy").string(), "--k", (dir.path() / "k.npy").string(), "--v",
                           (dir.path() / "v.npy").string(), "--threads", "1", "--out", out.string()},
      true);
  INFO(r.output);
  CHECK(r.exit_status == 2);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  CHECK(r.output.find("needs about") != std::string::npos);
  CHECK(r.output.find("--method streaming") != std::string::npos);
  CHECK(!fs::exists(out));
  // The same request with the header-only empty stack is refused under the cap as well (no allocation).
  const ProcessResult e = run_process(
      "/usr/bin/prlimit", {"--as=1073741824", std::string(ATTNLAB_BIN_DIR) + "/attend", "--q",
                           write_empty_stack(dir.path() / "e.npy"), "--k", (dir.path() / "k.npy").string(), "--v",
                           (dir.path() / "v.npy").string(), "--out", out.string()},
      true);
  INFO(e.output);
  CHECK(e.exit_status == 2);
  CHECK(e.output.find("at least 1") != std::string::npos);
}

TEST_CASE("bug: attend's memory estimate ignored --proj, --landmarks and --features: refused before allocating, naming them" *
          doctest::skip(attnlab::testing::kAddressSanitizer)) {
  // Small inputs, large parameters: Linformer's E and F at k = n = 8192 (2 GiB in double and float), Nystrom's
  // m x m and n x m blocks at m = n = 4096 (0.8 GiB), FAVOR's n x D features at D = 2^22 (8 GiB). Under a 512 MiB
  // cap each was estimated at 0.02 GiB and then failed out of memory (exit 1); the method's own workspace
  // formula (the registry's cost and draw sizes) must refuse it first: exit 2, one line naming the parameter.
  ScratchDir dir;
  struct Case {
    Eigen::Index n;
    std::vector<std::string> flags;
    std::string names;
  };
  const std::vector<Case> cases = {{8192, {"--method", "linformer", "--proj", "8192"}, "k = 8192"},
                                   {4096, {"--method", "nystrom", "--landmarks", "4096"}, "m = 4096"},
                                   {64, {"--method", "favor", "--features", "4194304"}, "D = 4194304"}};
  for (const Case& c : cases) {
    INFO("attend " << c.flags[1] << " " << c.flags[2] << " " << c.flags[3]);
    const Mat<double> x = Mat<double>::Constant(c.n, 4, 0.25);
    for (const char* name : {"q.npy", "k.npy", "v.npy"}) write_npy(dir.path() / name, to_npy(x));
    const fs::path out = dir.path() / "out.npy";
    std::vector<std::string> args = {"--as=536870912", std::string(ATTNLAB_BIN_DIR) + "/attend", "--q", (dir.path() / "q.npy").string(),
                                     "--k", (dir.path() / "k.npy").string(), "--v", (dir.path() / "v.npy").string(),
                                     "--threads", "1", "--out", out.string()};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    const ProcessResult r = run_process("/usr/bin/prlimit", args, true);
    INFO(r.output);
    CHECK(r.exit_status == 2);
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
    CHECK(r.output.find("needs about") != std::string::npos);
    CHECK(r.output.find(c.names) != std::string::npos);
    CHECK(!fs::exists(out));
  }
}

TEST_CASE("bug: attend --threads 1024 under a memory cap exited 1 with the OpenMP runtime's message; now exit 2 and one line" *
          doctest::skip(attnlab::testing::kAddressSanitizer)) {
  // 1024 heads of 2 x 2, so 1024 workers would run; their stacks (8 MiB each by default) cannot fit in 1 GiB.
  ScratchDir dir;
  NpyArray a;
  a.dtype = NpyDtype::float64;
  a.shape = {1024, 2, 2};
  a.values.assign(1024 * 4, 0.25);
  for (const char* name : {"q.npy", "k.npy", "v.npy"}) write_npy(dir.path() / name, a);
  const ProcessResult r = run_process(
      "/usr/bin/prlimit", {"--as=1073741824", std::string(ATTNLAB_BIN_DIR) + "/attend", "--q", (dir.path() / "q.npy").string(),
                           "--k", (dir.path() / "k.npy").string(), "--v", (dir.path() / "v.npy").string(), "--threads", "1024",
                           "--out", (dir.path() / "out.npy").string()},
      true);
  INFO(r.output);
  CHECK(r.exit_status == 2);
  CHECK(r.output.find("--threads: 1024 threads need") != std::string::npos);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  CHECK(!fs::exists(dir.path() / "out.npy"));
}
