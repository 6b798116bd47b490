// The user's own matrices (issue 7): experiments run on given .npy inputs, say so in every table's
// `inputs` column, leave the ledger alone, and refuse incomplete, inconsistent or malformed inputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <fmt/format.h>
#include <map>

#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/npy.hpp"
#include "attnlab/core/rng.hpp"
#include "attnlab/lab/subprocess.hpp"
#include "support.hpp"

using namespace attnlab;
using attnlab::testing::run_binary;
using attnlab::testing::ScratchDir;

namespace {

// Small inputs of every kind, written with the library's writer into `dir`.
void write_inputs(const std::filesystem::path& dir) {
  Rng rng(attnlab::testing::test_seed(11));
  const auto put = [&](const char* name, const Eigen::MatrixXd& m) { write_npy(dir / name, to_npy<double>(m)); };
  put("wq.npy", gaussian_matrix(6, 2, rng));
  put("wk.npy", gaussian_matrix(6, 2, rng));
  put("x.npy", gaussian_matrix(5, 6, rng));
  put("q.npy", gaussian_matrix(12, 4, rng));
  put("k.npy", gaussian_matrix(12, 4, rng));
  put("v.npy", gaussian_matrix(12, 3, rng));
  put("xr.npy", gaussian_matrix(8, 4, rng));
  put("b.npy", gaussian_matrix(8, 8, rng));
  put("wk_short.npy", gaussian_matrix(5, 2, rng));
  put("k_wide.npy", gaussian_matrix(12, 5, rng));
  std::ofstream(dir / "bad.npy") << "\x93NUMPY\x01\x00garbage";
}

std::string p(const ScratchDir& d, const char* name) { return (d.path() / name).string(); }

// " x 2^e": how the label says W_Q or W_K was brought to unit scale (max |w| in [0.5, 1)); "" for e = 0.
std::string scale_suffix(const std::string& path) {
  int e = 0;
  std::frexp(read_npy_matrix<double>(path).cwiseAbs().maxCoeff(), &e);
  return e == 0 ? "" : " x 2^" + std::to_string(-e);
}

// Runs `name` on given inputs with 1 and 2 threads: every table ends with the `inputs` column
// holding `label`, no ledger appears, and the tables other than timings are identical.
void check_given_run(const std::string& name, const std::vector<std::string>& flags, const std::string& label) {
  INFO("experiment: " << name);
  ScratchDir one, two;
  for (const ScratchDir* out : {&one, &two}) {
    std::vector<std::string> args = {"--quick", "--seed", "5", "--threads", out == &one ? "1" : "2",
                                     "--out", out->path().string()};
    args.insert(args.end(), flags.begin(), flags.end());
    const auto r = run_binary(name, args);
    INFO(r.output);
    REQUIRE(r.exit_status == 0);
  }
  const auto files = one.files();
  CHECK(!files.empty());
  CHECK(files == two.files());
  CHECK(std::find(files.begin(), files.end(), "claims.csv") == files.end());  // user data changes no verdict
  for (const auto& f : files) {
    INFO("table: " << f);
    const auto rows = read_csv_file(one.path() / f);
    REQUIRE(rows.size() >= 2);
    CHECK(rows[0].back() == "inputs");
    for (std::size_t i = 1; i < rows.size(); ++i) CHECK(rows[i].back() == label);
    if (!f.ends_with("_timing.csv"))
      CHECK(attnlab::testing::read_text(one.path() / f) == attnlab::testing::read_text(two.path() / f));
  }
}

// One line, exit status 2, naming the experiment and `needle`, and nothing written.
void check_refused(const std::string& name, std::vector<std::string> args, const std::string& needle) {
  ScratchDir out;
  args.insert(args.end(), {"--quick", "--out", (out.path() / "o").string()});
  const auto r = run_binary(name, args);
  INFO(name << ": " << r.output);
  CHECK(r.exit_status == 2);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  CHECK(r.output.find(name) == 0);
  CHECK(r.output.find(needle) != std::string::npos);
  CHECK(!std::filesystem::exists(out.path() / "o"));
}

}  // namespace

TEST_CASE("experiments run on given .npy inputs, label every table and write no ledger") {
  ScratchDir in;
  write_inputs(in.path());
  const std::vector<std::string> qk = {"--wq", p(in, "wq.npy"), "--wk", p(in, "wk.npy")};
  std::vector<std::string> qkx = qk;
  qkx.insert(qkx.end(), {"--x", p(in, "x.npy")});
  const std::string qk_label = "given: wq=" + p(in, "wq.npy") + scale_suffix(p(in, "wq.npy")) + ", wk=" + p(in, "wk.npy") +
                               scale_suffix(p(in, "wk.npy"));
  const std::string qkx_label = qk_label + ", x=" + p(in, "x.npy");
  for (const char* name : {"exp_qk_identities", "exp_qk_precision", "exp_param_growth"})
    check_given_run(name, qkx, qkx_label);
  for (const char* name : {"exp_qk_spectrum", "exp_qk_eigen_cost", "exp_qk_attention_cost"})
    check_given_run(name, qk, qk_label);
  const std::vector<std::string> att = {"--q", p(in, "q.npy"), "--k", p(in, "k.npy"), "--v", p(in, "v.npy")};
  const std::string att_label = "given: q=" + p(in, "q.npy") + ", k=" + p(in, "k.npy") + ", v=" + p(in, "v.npy");
  for (const char* name : {"exp_linear_attention", "exp_nystrom", "exp_random_features", "exp_linformer_theorems",
                           "exp_linformer_rank"})
    check_given_run(name, att, att_label);
  check_given_run("exp_lowrank_regression", {"--x", p(in, "xr.npy"), "--b", p(in, "b.npy")},
                  "given: x=" + p(in, "xr.npy") + ", b=" + p(in, "b.npy"));
}

TEST_CASE("incomplete, inconsistent or malformed given inputs are usage errors") {
  ScratchDir in;
  write_inputs(in.path());
  check_refused("exp_qk_identities", {"--wq", p(in, "wq.npy")}, "--wk");
  check_refused("exp_qk_identities", {"--wk", p(in, "wk.npy"), "--x", p(in, "x.npy")}, "--wq");
  check_refused("exp_qk_spectrum", {"--wq", p(in, "wq.npy"), "--wk", p(in, "wk_short.npy")}, "wk_short.npy");
  check_refused("exp_qk_identities", {"--wq", p(in, "wq.npy"), "--wk", p(in, "wk.npy"), "--x", p(in, "q.npy")},
                "q.npy");
  check_refused("exp_qk_spectrum", {"--wq", p(in, "x.npy"), "--wk", p(in, "x.npy")}, "d_k > d");
  check_refused("exp_nystrom", {"--q", p(in, "q.npy"), "--k", p(in, "k_wide.npy"), "--v", p(in, "v.npy")},
                "k_wide.npy");
  check_refused("exp_nystrom", {"--q", p(in, "q.npy"), "--k", p(in, "k.npy"), "--v", p(in, "b.npy")}, "b.npy");
  check_refused("exp_nystrom", {"--q", p(in, "q.npy"), "--k", p(in, "k.npy")}, "--v");
  check_refused("exp_lowrank_regression", {"--x", p(in, "xr.npy"), "--b", p(in, "bad.npy")}, "bad.npy");
  check_refused("exp_lowrank_regression", {"--x", p(in, "xr.npy"), "--b", p(in, "absent.npy")}, "absent.npy");
  check_refused("exp_lowrank_regression", {"--x", p(in, "xr.npy"), "--b", p(in, "v.npy")}, "v.npy");
  // Experiments that take no matrices have no such flags.
  check_refused("exp_qk_merge", {"--wq", p(in, "wq.npy"), "--wk", p(in, "wk.npy")}, "--wq");
}

TEST_CASE("a run on given inputs refuses an --out that holds the claims ledger") {
  ScratchDir in, out;
  write_inputs(in.path());
  std::ofstream(out.path() / "claims.csv") << "id,source,verdict,metric,observed,threshold,evidence,note,experiment\n";
  const auto r = run_binary("exp_qk_spectrum",
                            {"--quick", "--wq", p(in, "wq.npy"), "--wk", p(in, "wk.npy"), "--out", out.path().string()});
  INFO(r.output);
  CHECK(r.exit_status == 2);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  CHECK(r.output.find("claims") != std::string::npos);
  CHECK(out.files() == std::vector<std::string>{"claims.csv"});
}

TEST_CASE("bug: W_Q, W_K stored at 1e-25 or 1e30 flipped what the experiments measured; every scale now gives the same tables") {
  // Ranks, eigenvalue counts, shares and residual ratios do not depend on the scale of W_Q and W_K. At 2^-90 the
  // float products underflowed to 0 (rank 0, ratios 0/0) and at 2^100 they overflowed; the given weights are now
  // brought to unit scale by a power of two, which moves no bit: the tables must be the same bytes at any
  // power-of-two scale (but for the inputs column, which says by how much each was scaled), and at 1e-25 and
  // 1e30 (not powers of two: the last bits may differ) the counts must be the same.
  ScratchDir in;
  Rng rng(attnlab::testing::test_seed(12));
  const Eigen::MatrixXd wq = gaussian_matrix(12, 3, rng), wk = gaussian_matrix(12, 3, rng), x = gaussian_matrix(7, 12, rng);
  write_npy(in.path() / "x.npy", to_npy<double>(x));
  const auto tables = [&](const std::string& name, double scale, bool with_x) {
    const std::string tag = fmt::format("{:g}", scale);
    write_npy(in.path() / ("wq" + tag + ".npy"), to_npy<double>(Eigen::MatrixXd(wq * scale)));
    write_npy(in.path() / ("wk" + tag + ".npy"), to_npy<double>(Eigen::MatrixXd(wk * scale)));
    const std::filesystem::path out = in.path() / (name + "-" + tag);
    std::vector<std::string> args = {"--quick", "--seed", "5", "--out", out.string(), "--wq", p(in, ("wq" + tag + ".npy").c_str()),
                                     "--wk", p(in, ("wk" + tag + ".npy").c_str())};
    if (with_x) args.insert(args.end(), {"--x", p(in, "x.npy")});
    const auto r = run_binary(name, args);
    INFO(name << " at scale " << tag << ": " << r.output);
    REQUIRE(r.exit_status == 0);
    std::map<std::string, std::vector<std::vector<std::string>>> found;
    for (const auto& e : std::filesystem::directory_iterator(out))
      if (!e.path().filename().string().ends_with("_timing.csv")) {
        auto rows = read_csv_file(e.path());
        for (auto& row : rows) row.pop_back();  // the inputs column
        found[e.path().filename().string()] = rows;
      }
    return found;
  };
  for (const auto& [name, with_x] : std::vector<std::pair<std::string, bool>>{
           {"exp_qk_spectrum", false}, {"exp_qk_identities", true}, {"exp_qk_precision", true}, {"exp_param_growth", true}}) {
    INFO("experiment: " << name);
    const auto unit = tables(name, 1.0, with_x);
    CHECK(tables(name, std::ldexp(1.0, -90), with_x) == unit);
    CHECK(tables(name, std::ldexp(1.0, 100), with_x) == unit);
  }
  for (double scale : {1e-25, 1e30}) {
    INFO("exp_qk_spectrum at scale " << scale);
    const auto unit = tables("exp_qk_spectrum", 1.0, false).at("qk_spectrum.csv");
    const auto other = tables("exp_qk_spectrum", scale, false).at("qk_spectrum.csv");
    REQUIRE(other.size() == unit.size());
    for (std::size_t c = 0; c < unit[0].size(); ++c)
      if (unit[0][c].find("rank") != std::string::npos || unit[0][c].find("eig_S") != std::string::npos)
        for (std::size_t r = 0; r < unit.size(); ++r) CHECK(other[r][c] == unit[r][c]);
  }
}

TEST_CASE("bug: a given input too large for the memory left failed out of memory after setup ('try --quick'); now refused first" *
          doctest::skip(attnlab::testing::kAddressSanitizer)) {
  // Q, K, V of 8192 x 64 doubles (4 MiB each): L1's Q K^T alone is 8192 x 8192 doubles (512 MiB). Under a
  // 200 MB address-space cap the run must be refused before it measures: exit 2, one line naming the inputs and
  // what they need, and no --out.
  ScratchDir in;
  const Eigen::MatrixXd m = Eigen::MatrixXd::Constant(8192, 64, 0.125);
  for (const char* name : {"q.npy", "k.npy", "v.npy"}) write_npy(in.path() / name, to_npy<double>(m));
  const std::filesystem::path out = in.path() / "out";
  const ProcessResult r = run_process(
      "/usr/bin/prlimit", {"--as=204800000", std::string(ATTNLAB_BIN_DIR) + "/exp_linformer_rank", "--q", p(in, "q.npy"), "--k",
                           p(in, "k.npy"), "--v", p(in, "v.npy"), "--threads", "1", "--out", out.string()},
      true);
  INFO(r.output);
  CHECK(r.exit_status == 2);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  CHECK(r.output.find("8192 x 8192") != std::string::npos);
  CHECK(r.output.find("--quick") == std::string::npos);
  CHECK(!std::filesystem::exists(out));
}
