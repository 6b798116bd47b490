// vit_step_dump (issue 14 item 3): one whole ViT<double> training step of every trainable attention method, and
// whole RecallModel<double> steps (its own layers, with two methods and without attention), written for
// tools/vit_torch.py to redo in PyTorch and compare. A ctest helper (vit_step_check.py runs it), not installed.
//
// For each method of trainable_attention_names(), into OUT/<method>/:
//   checkpoint/            the model's weights (save_checkpoint: float32 .npy + manifest.json)
//   images.npy, labels.npy the batch: uint8 (N, image, image) and int64 (N)
//   attnlab/               what `vit_torch.py compare` reads, all float64:
//     loss.npy (1,)  logits.npy (N, classes)  grad/<name>.npy  updated/<name>.npy
// and for the recall model (exact, linformer and the baseline without attention, or the --method given, and the
// baseline) into OUT/recall-<method>/: the same, the batch as keys.npy, values.npy, labels.npy (int32 (N, 2P),
// recall_spec.md's files of the training stream's first N sequences) and the logits one row per query.
// The step is computed by a model LOADED from checkpoint/ (float32 values, exact in double), so attnlab and
// PyTorch start from identical weights; the schedule's learning rate is cosine_lr(5e-4, --step, --total-steps).
//
// usage: vit_step_dump --out DIR [--method M]... [--seed S] [--batch N] [--step T] [--total-steps N]
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "attnlab/attention/trainable.hpp"
#include "attnlab/core/rng.hpp"
#include "attnlab/io/atomic_file.hpp"
#include "attnlab/io/npy.hpp"
#include "attnlab/model/adam.hpp"
#include "attnlab/model/checkpoint.hpp"
#include "attnlab/model/identity_mixer.hpp"
#include "attnlab/model/recall_model.hpp"
#include "attnlab/model/recall_protocol.hpp"
#include "attnlab/model/trainer.hpp"
#include "attnlab/model/vit.hpp"

using namespace attnlab;
namespace fs = std::filesystem;

namespace vit_step_dump {  // compiled beside other programs, linked alone (CMakeLists.txt: attnlab_programs)

namespace {

constexpr double kPeakLr = 5e-4;  // vit_spec.md's (and vit_torch.py's PEAK_LR)

// A small model the PyTorch mirror runs in about a second per method: 8 x 8 images, 4 x 4 windows every 2
// pixels of the image padded by 1 (a 4 x 4 grid: 16 tokens, overlapping as the real model's), D 16, 2 heads
// (d_k 8), 2 blocks (so the residual stream and a block's input gradient are exercised), MLP 32. Options
// the methods default from n are set so the approximations approximate: Nystrom 4 landmarks of 16 tokens
// (segments of 4), Linformer k 4, 32 random features.
ViTConfig small_config(const std::string& method, std::uint64_t seed) {
  ViTConfig c;
  c.image = 8;
  c.patch = 4;
  c.stride = 2;
  c.pad = 1;
  c.D = 16;
  c.heads = 2;
  c.layers = 2;
  c.mlp = 32;
  c.seed = seed;
  c.attention.method = method;
  c.attention.landmarks = 4;
  c.attention.projection_k = 4;
  c.attention.features = 32;
  return c;
}

ViT<double> build(const ViTConfig& c) {
  return ViT<double>(c);
}

// A small recall model for the same purpose: 3 pairs (6 tokens) of 7 keys and 5 values, D 16, 2 heads, 2 blocks, MLP
// 32; Linformer's k and Nystrom's landmarks 2 (segments of 3 tokens), 32 random features.
RecallConfig small_recall_config(const std::string& method, std::uint64_t seed) {
  RecallConfig c;
  c.task = {3, 7, 5};
  c.D = 16;
  c.heads = 2;
  c.layers = 2;
  c.mlp = 32;
  c.seed = seed;
  c.attention.method = method;
  c.attention.landmarks = 2;
  c.attention.projection_k = 2;
  c.attention.features = 32;
  return c;
}

// vit_spec.md initialises weights as N(0, 0.02^2), biases 0, LayerNorm 1 and 0: at that scale every score
// is near 0 and attention near uniform, where a wrong softmax or normalisation backward can hide. Every
// learned tensor gets an added N(0, s^2): s = 1 / sqrt(rows) for matrices (inputs of size about 1 give
// outputs of size about 1, so scores spread over a few units), 0.2 for vectors (biases, LayerNorm gamma
// and beta away from 0 and 1, so their gradients are all exercised). The recall model's tables and marker are
// matrices like the others.
template <typename Model>
void spread_weights(Model& model, Rng& rng) {
  for (auto& t : model.parameter_tensors()) {
    const double s = t.is_vector ? 0.2 : 1.0 / std::sqrt(static_cast<double>(t.rows));
    for (Eigen::Index i = 0; i < t.size(); ++i) t.data[i] += s * rng.normal();
  }
}

// An .npy file of raw little-endian integers (NumPy's header, format 1.0), for the batch: the library's
// writer holds floats only, and vit_torch.py wants uint8 images and integer labels.
void write_integer_npy(const fs::path& path, const std::string& descr, const std::vector<std::size_t>& shape,
                       const void* data, std::size_t bytes) {
  std::string dims;
  for (std::size_t s : shape) dims += std::to_string(s) + ",";
  if (shape.size() > 1) dims.pop_back();
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, dims);
  // Magic (6) + version (2) + length (2) + header + '\n' is a multiple of 64 bytes.
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  std::string file = "\x93NUMPY";
  file += '\x01';
  file += '\x00';
  file += static_cast<char>(header.size() & 0xff);
  file += static_cast<char>(header.size() >> 8);
  file += header;
  file.append(static_cast<const char*>(data), bytes);
  write_file_atomically(path, file);
}

// A tensor as a float64 .npy of its manifest shape: (rows,) for a vector, (rows, cols) in C order otherwise.
void write_tensor(const fs::path& path, const TensorRef<double>& t) {
  NpyArray a;
  a.dtype = NpyDtype::float64;
  if (t.is_vector) {
    a.shape = {static_cast<std::size_t>(t.rows)};
    a.values.assign(t.data, t.data + t.size());
  } else {
    const Eigen::Map<const Mat<double>> m(t.data, t.rows, t.cols);
    a = to_npy(Mat<double>(m));
  }
  write_npy(path, a);
}

void dump_method(const std::string& method, const fs::path& out, std::uint64_t seed, Eigen::Index batch,
                 std::int64_t step, std::int64_t total_steps) {
  const ViTConfig config = small_config(method, seed);
  {
    ViT<double> fresh = build(config);
    Rng rng(derive_seed(seed, 1));
    spread_weights(fresh, rng);
    save_checkpoint(fresh, out / "checkpoint", step);
  }
  // Both sides start from the float32 values the checkpoint holds.
  ViT<double> model = build(config);
  load_checkpoint(model, out / "checkpoint");

  // A random batch: pixels uniform in 0..255, labels uniform in 0..classes-1.
  Rng rng(derive_seed(seed, 2));
  const auto side = static_cast<std::size_t>(config.image), N = static_cast<std::size_t>(batch);
  std::vector<std::uint8_t> pixels(N * side * side), labels(N);
  for (auto& p : pixels) p = static_cast<std::uint8_t>(rng.uniform() * 256.0);
  for (auto& l : labels) l = static_cast<std::uint8_t>(rng.uniform() * static_cast<double>(config.classes));
  std::vector<std::int64_t> labels64(labels.begin(), labels.end()), images(N);
  for (std::size_t i = 0; i < N; ++i) images[i] = static_cast<std::int64_t>(i);
  write_integer_npy(out / "images.npy", "|u1", {N, side, side}, pixels.data(), pixels.size());
  write_integer_npy(out / "labels.npy", "<i8", {N}, labels64.data(), labels64.size() * sizeof(std::int64_t));

  const ImageSet data{pixels, labels, config.image};
  const fs::path dir = out / "attnlab";
  fs::create_directories(dir / "grad");
  fs::create_directories(dir / "updated");
  write_npy(dir / "logits.npy", to_npy(predict_logits(model, data, images)));  // before the step, as PyTorch's
  Trainer<double> trainer(model);
  const double lr = cosine_lr(kPeakLr, step, total_steps);
  const double loss = trainer.step(data, images, lr);
  write_npy(dir / "loss.npy", NpyArray{{1}, NpyDtype::float64, {loss}});
  for (const auto& g : trainer.last_gradient()) write_tensor(dir / "grad" / (g.name + ".npy"), g);
  for (const auto& p : model.parameter_tensors()) write_tensor(dir / "updated" / (p.name + ".npy"), p);
  fmt::print("vit_step_dump: {}: batch {}, loss {:.17g}, lr {:.6g}, {} tensors in {}\n", method, batch, loss, lr,
             trainer.last_gradient().size(), out.string());
}

void dump_recall_method(const std::string& method, const fs::path& out, std::uint64_t seed, Eigen::Index batch,
                        std::int64_t step, std::int64_t total_steps) {
  const RecallConfig config = small_recall_config(method, seed);
  {
    RecallModel<double> fresh(config);
    Rng rng(derive_seed(seed, 1));
    spread_weights(fresh, rng);
    save_checkpoint(fresh, out / "checkpoint", step);
  }
  RecallModel<double> model(config);
  load_checkpoint(model, out / "checkpoint");
  // The batch: the training stream's first sequences, as files in recall_spec.md's layout.
  const RecallSet data = recall_set(config.task, derive_seed(seed, 2), RecallSplit::train, batch);
  for (const auto& [name, bytes] : recall_set_files(data))
    if (name != "manifest.json") write_file_atomically(out / name, bytes);
  std::vector<std::int64_t> items(static_cast<std::size_t>(batch));
  for (std::size_t i = 0; i < items.size(); ++i) items[i] = static_cast<std::int64_t>(i);
  const fs::path dir = out / "attnlab";
  fs::create_directories(dir / "grad");
  fs::create_directories(dir / "updated");
  write_npy(dir / "logits.npy", to_npy(predict_logits(model, data, items)));
  Trainer<double, RecallModel<double>> trainer(model);
  const double lr = cosine_lr(kPeakLr, step, total_steps);
  const double loss = trainer.step(data, items, lr);
  write_npy(dir / "loss.npy", NpyArray{{1}, NpyDtype::float64, {loss}});
  for (const auto& g : trainer.last_gradient()) write_tensor(dir / "grad" / (g.name + ".npy"), g);
  for (const auto& p : model.parameter_tensors()) write_tensor(dir / "updated" / (p.name + ".npy"), p);
  fmt::print("vit_step_dump: recall {}: batch {}, loss {:.17g}, lr {:.6g}, {} tensors in {}\n", method, batch, loss, lr,
             trainer.last_gradient().size(), out.string());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vit_step_dump: one ViT<double> and one RecallModel<double> training step per attention method, for "
               "tools/vit_torch.py compare"};
  fs::path out;
  std::vector<std::string> methods;
  std::uint64_t seed = 20250311;
  Eigen::Index batch = 20;  // three chunks of kChunkImages = 8 (8, 8, 4): the chunk reduction is exercised
  std::int64_t step = 3, total_steps = 10;
  app.add_option("--out", out, "directory; OUT/<method>/ gets the checkpoint, the batch and attnlab/")->required();
  app.add_option("--method", methods, "a method of trainable_attention_names() (default: every one)")
      ->check(CLI::IsMember(trainable_attention_names()));
  std::string task = "both";
  app.add_option("--task", task, "the ViT's steps, the recall model's, or both")
      ->check(CLI::IsMember({"vit", "recall", "both"}))
      ->capture_default_str();
  app.add_option("--seed", seed, "weights and batch")->capture_default_str();
  app.add_option("--batch", batch, "images in the batch")->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--step", step, "the step t of the cosine schedule")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--total-steps", total_steps, "the schedule's T")->check(CLI::PositiveNumber)->capture_default_str();
  try {
    app.parse(argc, argv);
    if (step >= total_steps)
      throw CLI::ValidationError("--step", fmt::format("{} must be less than --total-steps {}", step, total_steps));
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "vit_step_dump: {}\n", e.what());
    return 2;
  }
  const bool explicit_methods = !methods.empty();
  if (methods.empty()) methods = trainable_attention_names();
  try {
    if (task != "recall")
      for (const auto& m : methods) dump_method(m, out / m, seed, batch, step, total_steps);
    if (task != "vit") {
      // The recall model's own layers (the embedding, the head at the queries, the identity in place of attention)
      // with exact attention and with Linformer (parameters of its own along the positions); every method's attention
      // is the same code as the ViT's, checked above. --method names others.
      std::vector<std::string> recall = explicit_methods ? methods : std::vector<std::string>{"exact", "linformer"};
      recall.emplace_back(kNoAttentionBaseline);
      for (const auto& m : recall) dump_recall_method(m, out / ("recall-" + m), seed, batch, step, total_steps);
    }
  } catch (const OutputError& e) {
    fmt::print(stderr, "vit_step_dump: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "vit_step_dump: {}\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace vit_step_dump
