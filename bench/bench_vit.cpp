// bench_vit (docs/performance.md): training throughput of the ViT (the default ViTConfig, float) with every
// trainable attention method at the training experiment's batch (16), and with exact attention also at the
// PyTorch peer's (256), then of the recall model (recall_spec.md's main point, float) with every method and its
// baseline without attention at the recall sweep's batch (32), as counted training FLOPs per second
// (model/flops.hpp) against this machine's sgemm rate measured in the same run; then a profile per method of where
// a step's time goes, for both models.
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "attnlab/attention/trainable.hpp"
#include "attnlab/core/rng.hpp"
#include "attnlab/io/csv_table.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/lab/timing.hpp"
#include "attnlab/model/adam.hpp"
#include "attnlab/model/classifier_head.hpp"
#include "attnlab/model/flops.hpp"
#include "attnlab/model/gelu.hpp"
#include "attnlab/model/patch_embedding.hpp"
#include "attnlab/model/query_head.hpp"
#include "attnlab/model/recall_model.hpp"
#include "attnlab/model/recall_protocol.hpp"
#include "attnlab/model/token_embedding.hpp"
#include "attnlab/model/trainer.hpp"
#include "attnlab/model/vit.hpp"
#include "gemm_rate.hpp"

using namespace attnlab;

namespace {

// Wall, user and system seconds of one timed training step.
struct StepTime {
  double wall = 0, user = 0, system = 0;
};

double seconds_of(const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

// `repeats` training steps of `trainer` on items 0 .. batch-1 of `data` (images, recall sequences), after one
// untimed warm-up step (it allocates the per-chunk activations and gradients, reused from then on). The steps
// change the weights; the work of a step does not depend on them.
template <typename Model>
std::vector<StepTime> time_steps(Trainer<float, Model>& trainer, const typename Model::Data& data, std::int64_t batch, int repeats) {
  std::vector<std::int64_t> images(static_cast<std::size_t>(batch));
  std::iota(images.begin(), images.end(), std::int64_t{0});
  const double lr = 5e-4;
  keep_alive(trainer.step(data, images, lr));
  std::vector<StepTime> times;
  for (int r = 0; r < repeats; ++r) {
    rusage r0{}, r1{};
    getrusage(RUSAGE_SELF, &r0);
    const auto t0 = std::chrono::steady_clock::now();
    const double loss = trainer.step(data, images, lr);
    const auto t1 = std::chrono::steady_clock::now();
    getrusage(RUSAGE_SELF, &r1);
    if (!std::isfinite(loss)) throw NonFiniteError(fmt::format("bench_vit: the loss became {} at batch {}", loss, batch));
    times.push_back({std::chrono::duration<double>(t1 - t0).count(), seconds_of(r1.ru_utime) - seconds_of(r0.ru_utime),
                     seconds_of(r1.ru_stime) - seconds_of(r0.ru_stime)});
  }
  return times;
}

// One part of the profile: seconds per chunk of kChunkImages images (forward and backward, every layer) on one
// thread, and its counted FLOPs (0 for element-wise work).
struct Part {
  std::string name;
  double seconds = 0, flops = 0;
};

// A simple profile of where a training step's time goes: one chunk of kChunkImages images of `data` through
// the model on this thread (as each worker runs it), the whole forward_backward and then each layer family's
// forward + backward on the activations that pass left behind, median of `repeats` each. Attention is the
// method alone (every image and head); "projections" is the rest of MHA (Q, K, V, O and the head copies);
// "mlp linears" is the MLP without its GELU. "other" is the whole minus the parts (residual adds, the loss).
// The optimiser runs once per step, not per chunk: "adam (per step)" is one Adam update of every parameter.
std::vector<Part> profile_chunk(const ViTConfig& config, const ImageSet& data, int repeats) {
  ViT<float> model(config);
  const Eigen::Index n = config.tokens(), H = config.heads, B = kChunkImages;
  const auto L = static_cast<std::size_t>(config.layers);
  std::vector<std::int64_t> images(static_cast<std::size_t>(B));
  std::iota(images.begin(), images.end(), std::int64_t{0});
  const std::span<const std::uint8_t> labels = data.labels.subspan(0, static_cast<std::size_t>(B));
  ViTActivations<float> act;
  ViTGrads<float> grads = model.zero_grads();
  const double scale = 1.0 / static_cast<double>(B);
  const auto& p = model.params();
  auto& g = grads.params;
  const auto time = [&](const std::function<void()>& work) { return median_seconds(work, repeats); };

  std::vector<Part> parts;
  const ViTForwardFlops f = vit_forward_flops(config);
  const double per_chunk = 3.0 * static_cast<double>(B);  // training = 3x forward, per image
  const double whole = time([&] {
    patchify<float>(data.pixels, images, data.side, config.patch, config.stride, config.pad, act.patches);
    keep_alive(model.forward_backward(act, labels, scale, &grads));
  });
  // The activations of the last forward_backward feed every part below; a random upstream gradient
  // stands in for each layer's (the work does not depend on its values).
  Rng rng(7);
  const Mat<float> d_tokens = gaussian_matrix<float>(B * n, config.D, rng);
  Mat<float> out, dx;
  parts.emplace_back("patch embedding", time([&] {
                     patchify<float>(data.pixels, images, data.side, config.patch, config.stride, config.pad, act.patches);
                     patch_embedding_forward(act.patches, p.embed_W, p.embed_b, p.embed_pos, out);
                     patch_embedding_backward(act.patches, d_tokens, g.embed_W, g.embed_b, g.embed_pos);
                   }), f.embed * per_chunk);
  parts.emplace_back("layernorm", time([&] {
                     for (std::size_t l = 0; l < L; ++l) {
                       auto& a = act.blocks[l];
                       const auto& b = p.blocks[l];
                       layernorm_forward(act.x[l], b.ln1_gamma, b.ln1_beta, out, a.ln1);
                       layernorm_backward(d_tokens, a.ln1, b.ln1_gamma, dx, g.blocks[l].ln1_gamma, g.blocks[l].ln1_beta);
                       layernorm_forward(a.h, b.ln2_gamma, b.ln2_beta, out, a.ln2);
                       layernorm_backward(d_tokens, a.ln2, b.ln2_gamma, dx, g.blocks[l].ln2_gamma, g.blocks[l].ln2_beta);
                     }
                     layernorm_forward(act.x[L], p.head_ln_gamma, p.head_ln_beta, out, act.head_ln);
                     layernorm_backward(d_tokens, act.head_ln, p.head_ln_gamma, dx, g.head_ln_gamma, g.head_ln_beta);
                   }), 0.0);
  const double mha = time([&] {
    for (std::size_t l = 0; l < L; ++l) {
      auto& a = act.blocks[l];
      const auto& attention = model.attention(static_cast<Eigen::Index>(l));
      mha_forward(a.ln1_out, p.blocks[l].attn, attention, n, H, out, a.mha, true);
      mha_backward(a.ln1_out, p.blocks[l].attn, attention, n, H, a.mha, d_tokens, dx, g.blocks[l].attn,
                   &grads.method[l]);  // the method's own parameters (Linformer's E, F), as the trainer passes them
    }
  });
  const Eigen::Index dk = config.head_width();
  const Mat<float> d_head = gaussian_matrix<float>(n, dk, rng);
  Mat<float> qh, kh, vh, oh, dqh, dkh, dvh;
  const double attention = time([&] {
    for (std::size_t l = 0; l < L; ++l) {
      auto& a = act.blocks[l];
      const auto& method = model.attention(static_cast<Eigen::Index>(l));
      for (Eigen::Index b = 0; b < B; ++b)
        for (Eigen::Index h = 0; h < H; ++h) {
          qh = a.mha.q.block(b * n, h * dk, n, dk);
          kh = a.mha.k.block(b * n, h * dk, n, dk);
          vh = a.mha.v.block(b * n, h * dk, n, dk);
          auto& tape = a.mha.heads[static_cast<std::size_t>(b * H + h)];
          method.forward(h, qh, kh, vh, oh, &tape);
          method.backward(h, *tape, d_head, dqh, dkh, dvh, &grads.method[l]);
        }
    }
  });
  parts.emplace_back(fmt::format("attention ({}, every head)", config.attention.method), attention, f.attention * per_chunk);
  parts.emplace_back("projections (Q, K, V, O, head copies)", mha - attention, f.projections * per_chunk);
  const double mlp = time([&] {
    for (std::size_t l = 0; l < L; ++l) {
      auto& a = act.blocks[l];
      mlp_forward(a.ln2_out, p.blocks[l].mlp, out, a.mlp);
      mlp_backward(a.ln2_out, p.blocks[l].mlp, a.mlp, d_tokens, dx, g.blocks[l].mlp);
    }
  });
  Mat<float> gelu_out, gelu_dx;
  const double gelu = time([&] {
    for (std::size_t l = 0; l < L; ++l) {
      auto& a = act.blocks[l];
      gelu_forward(a.mlp.a, gelu_out);
      gelu_backward(a.mlp.a, a.mlp.g, gelu_dx);
    }
  });
  parts.emplace_back("gelu", gelu, 0.0);
  parts.emplace_back("mlp linears", mlp - gelu, f.mlp * per_chunk);
  parts.emplace_back("classifier and loss", time([&] {
                     classifier_forward(act.head_ln_out, n, p.head_W, p.head_b, act.pooled, act.logits);
                     keep_alive(cross_entropy(act.logits, labels, scale, &act.dlogits));
                     classifier_backward(act.pooled, n, p.head_W, act.dlogits, dx, g.head_W, g.head_b);
                   }), f.head * per_chunk);
  double sum = 0;
  for (const auto& part : parts) sum += part.seconds;
  parts.emplace_back("other (residual adds, copies)", whole - sum, 0.0);
  parts.emplace_back("whole chunk (forward_backward)", whole, f.total() * per_chunk);
  Adam<float> adam(model.parameter_tensors());
  const auto params = model.parameter_tensors(), grad_refs = model.gradient_tensors(grads);
  parts.emplace_back("adam (per step)", time([&] { adam.step(params, grad_refs, 1e-9); }), 0.0);
  return parts;
}

// One chunk of the recall model (kChunkImages sequences of the training stream) on this thread, as profile_chunk for
// the ViT: the whole forward_backward, the attention method alone (every sequence and head, forward and backward),
// the embedding and the head at the queries (forward and backward), and the blocks' rest (projections, LayerNorms,
// MLPs, residual adds) as the whole minus those; then one Adam update of every parameter.
std::vector<Part> profile_recall_chunk(const RecallConfig& config, const RecallSet& data, int repeats) {
  RecallModel<float> model(config);
  const Eigen::Index n = config.tokens(), H = config.heads, B = kChunkImages, dv = config.head_width();
  const auto L = static_cast<std::size_t>(config.layers);
  std::vector<std::int64_t> items(static_cast<std::size_t>(B));
  std::iota(items.begin(), items.end(), std::int64_t{0});
  std::vector<std::uint8_t> labels;
  for (std::int64_t i : items) data.append_labels(i, labels);
  RecallActivations<float> act;
  RecallGrads<float> grads = model.zero_grads();
  const double scale = 1.0 / static_cast<double>(labels.size());
  const auto& p = model.params();
  auto& g = grads.params;
  const auto time = [&](const std::function<void()>& work) { return median_seconds(work, repeats); };
  const RecallForwardFlops f = recall_forward_flops(config);
  const double per_chunk = 3.0 * static_cast<double>(B);
  std::vector<Part> parts;
  const double whole = time([&] {
    model.set_inputs(act, data, items);
    keep_alive(model.forward_backward(act, labels, scale, &grads));
  });
  Rng rng(7);
  const Mat<float> d_tokens = gaussian_matrix<float>(B * n, config.D, rng), d_head = gaussian_matrix<float>(n, dv, rng);
  Mat<float> out, dx, qh, kh, vh, oh, dqh, dkh, dvh;
  const double io = time([&] {
    model.set_inputs(act, data, items);
    token_embedding_forward(act.key, act.value, p.keys, p.values, p.query, out);
    token_embedding_backward(act.key, act.value, d_tokens, g.keys, g.values, g.query);
    query_head_forward(act.x[L], act.query_rows, p.head_ln_gamma, p.head_ln_beta, p.head_W, p.head_b, act.logits, act.head);
    keep_alive(cross_entropy(act.logits, labels, scale, &act.dlogits));
    query_head_backward(act.query_rows, act.x[L].rows(), p.head_ln_gamma, p.head_W, act.dlogits, act.head, dx, g.head_ln_gamma,
                        g.head_ln_beta, g.head_W, g.head_b);
  });
  const double attention = time([&] {
    for (std::size_t l = 0; l < L; ++l) {
      auto& a = act.blocks[l];
      const auto& method = model.attention(static_cast<Eigen::Index>(l));
      for (Eigen::Index b = 0; b < B; ++b)
        for (Eigen::Index h = 0; h < H; ++h) {
          qh = a.mha.q.block(b * n, h * config.key_head_width(), n, config.key_head_width());
          kh = a.mha.k.block(b * n, h * config.key_head_width(), n, config.key_head_width());
          vh = a.mha.v.block(b * n, h * dv, n, dv);
          auto& tape = a.mha.heads[static_cast<std::size_t>(b * H + h)];
          method.forward(h, qh, kh, vh, oh, &tape);
          method.backward(h, *tape, d_head, dqh, dkh, dvh, &grads.method[l]);
        }
    }
  });
  parts.emplace_back("token embedding, query head and loss", io, f.head * per_chunk);
  parts.emplace_back(fmt::format("attention ({}, every head)", config.attention.method), attention, f.blocks.attention * per_chunk);
  parts.emplace_back("blocks' rest (projections, layernorms, mlp, residual adds)", whole - io - attention,
                     (f.blocks.projections + f.blocks.mlp) * per_chunk);
  parts.emplace_back("whole chunk (forward_backward)", whole, f.total() * per_chunk);
  Adam<float> adam(model.parameter_tensors());
  const auto params = model.parameter_tensors(), grad_refs = model.gradient_tensors(grads);
  parts.emplace_back("adam (per step)", time([&] { adam.step(params, grad_refs, 1e-9); }), 0.0);
  return parts;
}

// The timed configurations: every method at the experiment's batch (16), then exact attention at the
// PyTorch peer's (256; --quick: 32), in the order trainable_attention_names() lists the methods; then the recall
// model with every method and the baseline without attention at the recall sweep's batch.
struct Config {
  std::string method;
  std::int64_t batch;
  bool recall = false;
};
std::vector<Config> configurations(const std::string& method, bool quick) {
  std::vector<Config> out;
  for (const auto& m : trainable_attention_names())
    if (method == "all" || method == m) out.push_back({m, 16});
  if (method == "all" || method == "exact") out.push_back({"exact", quick ? 32 : 256});
  for (const auto& m : recall_sweep_methods())
    if (method == "all" || method == m) out.push_back({m, kRecallBatch, true});
  return out;
}

// The recall model bench_vit times: recall_spec.md's main point, the sweep's widths and method sizes.
RecallConfig bench_recall_config(const std::string& method, std::uint64_t seed) { return recall_training_config(method, seed, RecallShape{}); }

// Times every configuration, each row against the sgemm rates measured just before and just after it (the full
// measurement before the first and after the last), into bench_vit.csv (the ViT's) and bench_recall.csv (the recall
// model's, each row beside its method's ViT row at batch 16: vit_gemm_share and their ratio).
void time_configurations(const ExperimentCli& cli, const std::vector<Config>& configs, const ImageSet& data, const RecallSet& sequences,
                         int timed, Rng& rng) {
  const auto& opt = cli.options();
  // The sgemm ceiling side by side with the steps, as bench_attention measures it (bench/gemm_rate.hpp's
  // row_ceiling): in full before the first configuration and after the last, briefly between them.
  bench::GemmProbe probe = bench::ceiling_probe(opt.quick, opt.threads, rng);
  auto before = bench::full_ceiling(probe, opt.quick, " at the start");
  const std::vector<Column> common = {int_col("threads"), int_col("D"), int_col("heads"), int_col("layers"), int_col("mlp"),
                                      int_col("n"), int_col("repeats"), real_col("median_s"), real_col("min_s"), real_col("max_s"),
                                      real_col("user_s"), real_col("sys_s")};
  std::vector<Column> vit_columns = {text_col("method"), text_col("impl"), text_col("dtype"), int_col("batch")};
  vit_columns.insert(vit_columns.end(), common.begin(), common.end());
  vit_columns.insert(vit_columns.end(), {real_col("images_per_s"), real_col("counted_gflop_per_step"), real_col("gflops"),
                                         real_col("gemm_gflops"), real_col("eigen_gemm_gflops"), real_col("openblas_gemm_gflops"),
                                         real_col("gemm_before_gflops"), real_col("gemm_after_gflops"), real_col("gemm_share")});
  std::vector<Column> recall_columns = {text_col("method"), text_col("dtype"), int_col("batch"), int_col("pairs")};
  recall_columns.insert(recall_columns.end(), common.begin(), common.end());
  recall_columns.insert(recall_columns.end(), {real_col("sequences_per_s"), real_col("counted_gflop_per_step"), real_col("gflops"),
                                               real_col("gemm_gflops"), real_col("gemm_before_gflops"), real_col("gemm_after_gflops"),
                                               real_col("gemm_share"), real_col("vit_gemm_share", true),
                                               real_col("share_vs_vit", true)});
  CsvTable table(vit_columns), recall_table(recall_columns);
  std::map<std::string, double> vit_share;  // method -> its ViT row's share at batch 16
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const Config& c = configs[i];
    const std::int64_t batch = c.batch;
    std::vector<StepTime> times;
    double flops = 0;
    Eigen::Index D = 0, heads = 0, layers = 0, mlp = 0, n = 0;
    if (c.recall) {
      const RecallConfig config = bench_recall_config(c.method, opt.seed);
      RecallModel<float> model(config);
      Trainer<float, RecallModel<float>> trainer(model);
      times = time_steps(trainer, sequences, batch, timed);
      flops = recall_training_flops(config, batch);
      D = config.D, heads = config.heads, layers = config.layers, mlp = config.mlp, n = config.tokens();
    } else {
      ViTConfig config;  // vit_spec.md's model: n 196, D 64, 4 heads, 2 blocks, MLP 128
      config.seed = opt.seed;
      config.attention.method = c.method;
      ViT<float> model(config);
      Trainer<float> trainer(model);
      times = time_steps(trainer, data, batch, timed);
      flops = vit_training_flops(config, batch);
      D = config.D, heads = config.heads, layers = config.layers, mlp = config.mlp, n = config.tokens();
    }
    std::vector<double> wall, user, sys;
    for (const auto& t : times) {
      wall.push_back(t.wall);
      user.push_back(t.user);
      sys.push_back(t.system);
    }
    const double seconds = median(wall);
    const double gflops = flops / seconds * 1e-9;
    const auto after =
        i + 1 == configs.size() ? bench::full_ceiling(probe, opt.quick, " at the end") : bench::beside_ceiling(probe);
    const bench::RowCeiling ceiling = bench::row_ceiling(before, after);
    const double share = gflops / ceiling.gemm;
    if (c.recall) {
      const auto it = vit_share.find(c.method);
      const double vit = it == vit_share.end() ? std::nan("") : it->second;
      recall_table.add_row({c.method, "float32", batch, RecallShape{}.task.pairs, opt.threads, D, heads, layers, mlp, n, timed, seconds,
                            *std::min_element(wall.begin(), wall.end()), *std::max_element(wall.begin(), wall.end()), median(user),
                            median(sys), static_cast<double>(batch) / seconds, flops * 1e-9, gflops, ceiling.gemm,
                            ceiling.before_best, ceiling.after_best, share, vit, share / vit});
    } else {
      if (batch == 16) vit_share[c.method] = share;
      table.add_row({c.method, "attnlab", "float32", batch, opt.threads, D, heads, layers, mlp, n, timed, seconds,
                     *std::min_element(wall.begin(), wall.end()), *std::max_element(wall.begin(), wall.end()), median(user),
                     median(sys), static_cast<double>(batch) / seconds, flops * 1e-9, gflops, ceiling.gemm, ceiling.eigen,
                     ceiling.openblas, ceiling.before_best, ceiling.after_best, share});
    }
    before = after;
    fmt::print(stderr, "bench_vit: {} {}, float, batch {}, {} threads: {:.4f} s per step (median of {}; user {:.4f} s, "
               "system {:.4f} s), {:.0f} {}/s, {:.1f} GFLOP/s counted = {:.0f}% of sgemm\n",
               c.method, c.recall ? "recall model" : "ViT", batch, opt.threads, seconds, timed, median(user), median(sys),
               static_cast<double>(batch) / seconds, c.recall ? "sequences" : "images", gflops, 100 * share);
  }
  table.write(cli.output_path("bench_vit.csv"));
  recall_table.write(cli.output_path("bench_recall.csv"));
}

// Where a step's time goes (what bounds each method's throughput), on one thread as each worker runs, into
// bench_vit_profile.csv: one block of rows per method.
void profile_methods(const ExperimentCli& cli, const std::vector<Config>& configs, const ImageSet& data, const RecallSet& sequences,
                     int timed) {
  Eigen::setNbThreads(1);  // as the probe left it and the trainer runs each chunk
  const std::vector<Column> columns = {text_col("method"), text_col("part"), real_col("seconds_per_chunk", true),
                                       real_col("share_of_chunk", true), real_col("counted_gflop_per_chunk"), real_col("gflops", true),
                                       int_col("chunk_images"), int_col("repeats")};
  CsvTable profile(columns), recall_profile(columns);
  std::vector<std::pair<std::string, bool>> done;
  for (const auto& c : configs) {
    if (std::find(done.begin(), done.end(), std::pair{c.method, c.recall}) != done.end()) continue;
    done.emplace_back(c.method, c.recall);
    std::vector<Part> parts;
    if (c.recall) {
      parts = profile_recall_chunk(bench_recall_config(c.method, cli.options().seed), sequences, timed);
    } else {
      ViTConfig config;
      config.seed = cli.options().seed;
      config.attention.method = c.method;
      parts = profile_chunk(config, data, timed);
    }
    const double chunk_s = parts[parts.size() - 2].seconds;
    for (const auto& part : parts) {
      const bool per_step = part.name.rfind("adam", 0) == 0;
      (c.recall ? recall_profile : profile)
          .add_row({c.method, part.name, part.seconds, per_step ? std::nan("") : part.seconds / chunk_s, part.flops * 1e-9,
                    part.flops > 0 ? part.flops / part.seconds * 1e-9 : std::nan(""), kChunkImages, timed});
      fmt::print(stderr, "bench_vit profile{}: {:<40} {:9.3f} ms{}\n", c.recall ? " (recall)" : "", part.name, 1e3 * part.seconds,
                 per_step ? "" : fmt::format(" {:5.1f}% of a chunk", 100 * part.seconds / chunk_s));
    }
  }
  profile.write(cli.output_path("bench_vit_profile.csv"));
  recall_profile.write(cli.output_path("bench_recall_profile.csv"));
}

}  // namespace

int main(int argc, char** argv) {
  ExperimentCli cli("bench_vit", "ViT and recall-model training throughput of every attention method (float) against the sgemm rate");
  int repeats = 7;
  cli.add_integer("--repeats", repeats, "timed training steps per configuration, after one warm-up step (median reported), 1 to 1000",
                  1, 1000, true);
  std::vector<std::string> choices = {"all"};
  for (const auto& m : recall_sweep_methods()) choices.push_back(m);
  std::string method = "all";
  cli.add_choice("--method", method, "one attention method (the baseline without attention: the recall model only), or all", choices);
  cli.parse(argc, argv);
  return run_experiment(cli.name(), [&] {
    const auto& opt = cli.options();
    Rng rng(derive_seed(opt.seed, 1));
    const std::vector<Config> configs = configurations(method, opt.quick);
    const int timed = opt.quick ? std::min(repeats, 2) : repeats;
    // Random images and labels: pixel values do not change the work.
    const ViTConfig shape;
    std::int64_t most = 0;
    for (const auto& c : configs) most = std::max(most, c.batch);
    const auto side = static_cast<std::size_t>(shape.image);
    std::vector<std::uint8_t> pixels(static_cast<std::size_t>(most) * side * side), labels(static_cast<std::size_t>(most));
    for (auto& p : pixels) p = static_cast<std::uint8_t>(rng.uniform() * 256.0);
    for (auto& l : labels) l = static_cast<std::uint8_t>(rng.uniform() * static_cast<double>(shape.classes));
    const ImageSet data{pixels, labels, shape.image};
    // The recall model's sequences: the training stream's, as the sweep draws them.
    const RecallSet sequences = recall_training_stream(RecallShape{}, opt.seed);
    time_configurations(cli, configs, data, sequences, timed, rng);
    profile_methods(cli, configs, data, sequences, timed);
  });
}
