// The analyses of trained attention (issue 15): skew share of W_Q W_K^T per head, the spectrum of P and
// its energy rank, a model with another attention swapped in, and the verdict helpers R12 uses.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <vector>

#include "attnlab/core/rng.hpp"
#include "attnlab/io/csv_table.hpp"
#include "attnlab/lab/verdict.hpp"
#include "attnlab/model/analysis/attention_spectrum.hpp"
#include "attnlab/model/analysis/attention_swap.hpp"
#include "attnlab/model/analysis/qk_skew.hpp"
#include "attnlab/model/checkpoint.hpp"
#include "attnlab/model/recall_model.hpp"
#include "attnlab/model/recall_protocol.hpp"
#include "attnlab/model/trainer.hpp"
#include "support.hpp"

using namespace attnlab;

namespace {

const std::uint64_t kTrainedAnalysisSeed = attnlab::testing::test_seed(20251126);  // ATTNLAB_TEST_SEED overrides it

ViTConfig tiny_config(const std::string& method) {
  ViTConfig c;
  c.image = 8;
  c.patch = 4;
  c.stride = 2;
  c.pad = 1;
  c.D = 8;
  c.heads = 2;
  c.layers = 2;
  c.mlp = 12;
  c.seed = kTrainedAnalysisSeed;
  c.attention.method = method;
  return c;
}

ViT<double> tiny_model(const std::string& method) {
  return ViT<double>(tiny_config(method));
}

}  // namespace

TEST_CASE("qk_skew: the skew share of known products") {
  // M = e1 e2^T: S_w and R_w each carry half of ||M||_F^2, so the share is 1/sqrt(2).
  Mat<double> wq = Mat<double>::Zero(3, 1), wk = Mat<double>::Zero(3, 1);
  wq(0, 0) = 1;
  wk(1, 0) = 1;
  HeadSkew s = qk_skew(wq, wk);
  CHECK(s.m_norm == doctest::Approx(1.0));
  CHECK(s.skew_share == doctest::Approx(std::sqrt(0.5)).epsilon(1e-15));
  CHECK(s.split_residual <= 1e-15);
  // W_K = W_Q: M is symmetric, no skew part but for the GEMM's rounding (w w^T need not be bit-symmetric).
  Rng rng(kTrainedAnalysisSeed);
  const Mat<double> w = gaussian_matrix<double>(6, 2, rng, 1.0);
  CHECK(qk_skew(w, w).skew_share <= 1e-15);
  // W_K = -W_Q keeps M symmetric too; a random pair has a share strictly between 0 and 1, and the split is orthogonal.
  CHECK(qk_skew(w, Mat<double>(-w)).skew_share <= 1e-15);
  const Mat<double> w2 = gaussian_matrix<double>(6, 2, rng, 1.0);
  s = qk_skew(w, w2);
  CHECK(s.skew_share > 0.05);
  CHECK(s.skew_share < 0.999);
  CHECK(s.split_residual <= 1e-14);
  CHECK(s.m_norm == doctest::Approx((w * w2.transpose()).norm()).epsilon(1e-14));
}

TEST_CASE("layer_qk_skew: per head, with and without the projection biases") {
  Rng rng(kTrainedAnalysisSeed);
  MhaParams<double> p;
  p.Wq = gaussian_matrix<double>(8, 8, rng, 1.0);
  p.Wk = gaussian_matrix<double>(8, 8, rng, 1.0);
  p.bq = Vec<double>::Zero(8);
  p.bk = Vec<double>::Zero(8);
  auto heads = layer_qk_skew(p, 2);
  REQUIRE(heads.size() == 2);
  for (int h = 0; h < 2; ++h) {
    // Zero biases: the augmented M~ is M with a zero row and column, the same norms.
    CHECK(heads[h].augmented.skew_share == doctest::Approx(heads[h].weights.skew_share).epsilon(1e-14));
    const Mat<double> m = p.Wq.middleCols(4 * h, 4) * p.Wk.middleCols(4 * h, 4).transpose();
    CHECK(heads[h].weights.m_norm == doctest::Approx(m.norm()).epsilon(1e-14));
  }
  // Head 1 made symmetric (W_K,1 = W_Q,1) but with different biases: M is symmetric, M~ is not.
  p.Wk.middleCols(4, 4) = p.Wq.middleCols(4, 4);
  p.bq.segment(4, 4) = gaussian_matrix<double>(4, 1, rng, 1.0);
  heads = layer_qk_skew(p, 2);
  CHECK(heads[1].weights.skew_share <= 1e-15);
  CHECK(heads[1].augmented.skew_share > 0.01);
  CHECK(heads[0].weights.skew_share > 0.05);
}

TEST_CASE("energy_rank and cumulative_energy") {
  Eigen::VectorXd s(3);
  s << 3, 2, 1;  // energies 9, 4, 1 of 14
  const Eigen::VectorXd c = cumulative_energy(s);
  CHECK(c(0) == doctest::Approx(9.0 / 14));
  CHECK(c(1) == doctest::Approx(13.0 / 14));
  CHECK(c(2) == 1.0);
  CHECK(energy_rank(s, 0.5) == 1);
  CHECK(energy_rank(s, 9.0 / 14) == 1);
  CHECK(energy_rank(s, 0.9) == 2);
  CHECK(energy_rank(s, 0.95) == 3);
  CHECK(energy_rank(s, 1.0) == 3);
  CHECK_THROWS_AS(energy_rank(s, 0.0), std::invalid_argument);
  CHECK_THROWS_AS(energy_rank(s, 1.5), std::invalid_argument);
  CHECK_THROWS_AS(energy_rank(Eigen::VectorXd::Zero(3), 0.5), std::invalid_argument);
}

TEST_CASE("attention spectrum: uniform attention has rank 1, one-hot attention full rank") {
  const Eigen::Index n = 50, d = 4;
  // q = 0: every row of P is 1/n, P = 1 1^T / n with the single singular value 1.
  const Mat<double> zero = Mat<double>::Zero(n, d);
  Rng rng(kTrainedAnalysisSeed);
  const Mat<double> k = gaussian_matrix<double>(n, d, rng, 1.0);
  const Mat<double> p = softmax_attention_matrix(zero, k);
  CHECK((p.rowwise().sum().array() - 1).abs().maxCoeff() <= 1e-14);
  const Eigen::VectorXd s = attention_singular_values(p);
  CHECK(s(0) == doctest::Approx(1.0).epsilon(1e-12));
  CHECK(s(1) <= 1e-12);
  CHECK(energy_rank(s, 0.99) == 1);
  // A permutation-like P (each query attends to one key): every singular value 1, rank90 = ceil(0.9 n).
  Mat<double> q = Mat<double>::Zero(n, n);
  for (Eigen::Index i = 0; i < n; ++i) q(i, (i * 7) % n) = 100;
  const Mat<double> keys = Mat<double>::Identity(n, n);
  const Eigen::VectorXd s2 = attention_singular_values(softmax_attention_matrix(q, keys));
  CHECK(energy_rank(s2, 0.9) == 45);
  // The check inside attention_singular_values compares against ||P||_F^2.
  const Mat<double> pr = softmax_attention_matrix(gaussian_matrix<double>(n, d, rng, 2.0), k);
  CHECK(attention_singular_values(pr).squaredNorm() == doctest::Approx(pr.squaredNorm()).epsilon(1e-12));
}

TEST_CASE("with_attention: the trained tensors carried over; symmetric equals exact when M~ is symmetric") {
  ViT<double> exact = tiny_model("exact");
  Rng rng(kTrainedAnalysisSeed + 1);
  std::vector<std::uint8_t> pixels(6 * 64), labels(6);
  for (auto& v : pixels) v = static_cast<std::uint8_t>(rng.next_u64() % 256);
  for (auto& v : labels) v = static_cast<std::uint8_t>(rng.next_u64() % 10);
  const ImageSet images{pixels, labels, 8};
  const std::vector<std::int64_t> idx = {0, 1, 2, 3, 4, 5};
  // Scale the score weights up so attention is far from uniform and the two scores differ visibly.
  for (auto& b : exact.params().blocks) {
    b.attn.Wq *= 100;
    b.attn.Wk *= 100;
    b.attn.bq = gaussian_matrix<double>(8, 1, rng, 1.0);
  }
  TrainableAttentionConfig sym;
  sym.method = "symmetric";
  const Mat<double> l_exact = predict_logits(exact, images, idx);
  const Mat<double> l_sym = predict_logits(with_attention(exact, sym), images, idx);
  CHECK((l_exact - l_sym).cwiseAbs().maxCoeff() > 1e-6);  // a skew part changes the model
  // W_K = W_Q and b_k = b_q: M~ is symmetric, so S_w's scores are the scores.
  for (auto& b : exact.params().blocks) {
    b.attn.Wk = b.attn.Wq;
    b.attn.bk = b.attn.bq;
  }
  const Mat<double> l_exact2 = predict_logits(exact, images, idx);
  const ViT<double> swapped = with_attention(exact, sym);
  CHECK(swapped.attention(0).name() == "symmetric");
  CHECK(swapped.config().attention.method == "symmetric");
  CHECK((l_exact2 - predict_logits(swapped, images, idx)).cwiseAbs().maxCoeff() <= 1e-12 * l_exact2.cwiseAbs().maxCoeff());
  CHECK(swapped.params().head_W == exact.params().head_W);
}

TEST_CASE("judge_within_tolerance and judge_direct_or_condition") {
  // reference 0.85, tolerance 0.01: the line is 0.84.
  Judgement j = judge_within_tolerance({"changed", 0.845, 0.86}, 0.85, 0.01);
  CHECK(j.verdict == Verdict::holds);
  CHECK(j.observed == doctest::Approx(0.005));
  j = judge_within_tolerance({"changed", 0.70, 0.83}, 0.85, 0.01);
  CHECK(j.verdict == Verdict::fails);
  CHECK(j.observed == doctest::Approx(0.15));
  j = judge_within_tolerance({"changed", 0.83, 0.85}, 0.85, 0.01);
  CHECK(j.verdict == Verdict::inconclusive);
  CHECK(j.note.find("cannot decide") != std::string::npos);
  CHECK_THROWS_AS(judge_within_tolerance({"bad", 0.9, 0.8}, 0.85, 0.01), std::invalid_argument);
  CHECK_THROWS_AS(judge_within_tolerance({"bad", 0.8, 0.9}, 0.85, -0.01), std::invalid_argument);

  const Judgement holds = judge_within_tolerance({"a", 0.845, 0.86}, 0.85, 0.01);
  const Judgement fails = judge_within_tolerance({"b", 0.5, 0.6}, 0.85, 0.01);
  const Judgement open = judge_within_tolerance({"c", 0.83, 0.85}, 0.85, 0.01);
  CHECK(judge_direct_or_condition(holds, fails, "when X").verdict == Verdict::holds);
  const Judgement c = judge_direct_or_condition(fails, holds, "when X");
  CHECK(c.verdict == Verdict::conditional);
  CHECK(c.note.find("holds only when X") == 0);
  CHECK(c.observed == fails.observed);
  CHECK(judge_direct_or_condition(fails, fails, "when X").verdict == Verdict::fails);
  CHECK(judge_direct_or_condition(fails, open, "when X").verdict == Verdict::fails);
  CHECK(judge_direct_or_condition(open, holds, "when X").verdict == Verdict::inconclusive);
}

TEST_CASE("exp_trained_attention: bad or missing checkpoints are one line and exit status 2; --checkpoint writes no ledger") {
  using attnlab::testing::run_binary;
  using attnlab::testing::RunResult;
  using attnlab::testing::ScratchDir;
  ScratchDir out;
  const std::string missing = (out.path() / "no-such-checkpoint").string();
  RunResult r = run_binary("exp_trained_attention", {"--quick", "--checkpoint", missing, "--out", out.path().string()});
  INFO(r.output);
  CHECK(r.exit_status == 2);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  CHECK(r.output.find(missing) != std::string::npos);
  CHECK(!std::filesystem::exists(out.path() / "claims.csv"));
  // A full run without exp_vit_training's checkpoints in --out names the directory it looked in.
  ScratchDir full;
  r = run_binary("exp_trained_attention", {"--out", full.path().string()});
  INFO(r.output);
  CHECK(r.exit_status == 2);
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  CHECK(r.output.find((full.path() / "checkpoints").string()) != std::string::npos);
  CHECK(!std::filesystem::exists(full.path() / "claims.csv"));

  // A user's checkpoint (here an untrained, seeded default model): tables, no ledger rows.
  ViTConfig c;
  c.seed = kTrainedAnalysisSeed;
  ViT<float> model(c);
  save_checkpoint(model, out.path() / "mine", 0);
  ScratchDir run;
  r = run_binary("exp_trained_attention",
                 {"--quick", "--checkpoint", (out.path() / "mine").string(), "--out", run.path().string()});
  INFO(r.output);
  REQUIRE(r.exit_status == 0);
  CHECK(!std::filesystem::exists(run.path() / "claims.csv"));
  for (const char* f : {"trained_skew_share.csv", "trained_symmetric_swap.csv", "trained_attention_rank.csv",
                        "trained_attention_spectrum.csv", "trained_swap_error.csv", "trained_swap_accuracy.csv"})
    CHECK(std::filesystem::is_regular_file(run.path() / f));
  // A recall model's checkpoint through the same door: its rows are the recall task's, scored on its own test set.
  RecallConfig rc;
  rc.task = {4, 16, 8};
  rc.seed = kTrainedAnalysisSeed;
  RecallModel<float> recall(rc);
  save_checkpoint(recall, out.path() / "mine-recall", 0);
  ScratchDir recall_run;
  r = run_binary("exp_trained_attention",
                 {"--quick", "--checkpoint", (out.path() / "mine-recall").string(), "--out", recall_run.path().string()});
  INFO(r.output);
  REQUIRE(r.exit_status == 0);
  CHECK(!std::filesystem::exists(recall_run.path() / "claims.csv"));
  const auto swap = read_csv_file(recall_run.path() / "trained_symmetric_swap.csv");
  REQUIRE(swap.size() == 1 + 2);  // the trained model and its M -> S_w replacement, no symmetric model of the user's
  CHECK(swap[1][0] == "recall");
  CHECK(swap[1][5] == std::to_string(kQuickRecallTestSequences * 4));  // test_rows: 4 queries per sequence
}

TEST_CASE("exp_trained_attention --help names every claim it judges") {
  const auto r = attnlab::testing::run_binary("exp_trained_attention", {"--help"});
  INFO(r.output);
  CHECK(r.exit_status == 0);
  for (const char* claim : {"R12", "L5", "U18"}) CHECK(r.output.find(claim) != std::string::npos);
}
