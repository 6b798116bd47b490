// bench_inspect: attnlab_inspect on synthetic LLaMA-shaped checkpoints (q_proj and k_proj only, BF16, sharded),
// up to a 7B model's attention: 32 layers, d = 4096, 32 heads, d_k = 128 (2 GiB), written once under the build
// directory. Three sizes show how time and memory grow; the largest is judged against its targets by
// tools/bench_inspect_report.py (whole inspection <= 60 s, peak resident memory <= 256 MiB, the factored
// path's counted FLOP/s >= 40% of the sgemm rate measured around it).
#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <vector>

#include "attnlab/core/rng.hpp"
#include "attnlab/io/atomic_file.hpp"
#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/safetensors.hpp"
#include "attnlab/io/table_reader.hpp"
#include "attnlab/lab/experiment_cli.hpp"
#include "attnlab/lab/subprocess.hpp"
#include "gemm_rate.hpp"

using namespace attnlab;
namespace fs = std::filesystem;

namespace {

struct Size {
  const char* name;
  Eigen::Index layers, d, heads, d_k, shards;
  std::string spec() const { return fmt::format("llama BF16 q_proj k_proj L{} d{} H{} dk{} shards{}", layers, d, heads, d_k, shards); }
};

// The three sizes double d and the heads (at the 7B model's d_k) and the layers together, so time should grow
// 16x per step (L H d d_k^2: the QR of every head's d x 2 d_k [W_Q W_K]) and memory stay flat (heads are read
// one at a time). --quick: small ones for the checks.
std::vector<Size> sizes(bool quick) {
  if (quick) return {{"quick-a", 2, 128, 2, 32, 1}, {"quick-b", 2, 256, 4, 32, 2}, {"quick-c", 4, 256, 4, 64, 2}};
  return {{"llama-1/64", 8, 1024, 8, 128, 1}, {"llama-1/8", 16, 2048, 16, 128, 2}, {"llama-7b", 32, 4096, 32, 128, 4}};
}

// Writes the checkpoint unless <dir>/spec.txt says it is there already: weights uniform in [-0.05, 0.05)
// (their values do not change the work), model.safetensors.index.json when sharded, and config.json.
fs::path ensure_checkpoint(const fs::path& dir, const Size& s, std::uint64_t seed) {
  const fs::path index = dir / (s.shards > 1 ? "model.safetensors.index.json" : "model.safetensors");
  std::ifstream old(dir / "spec.txt");
  std::string said;
  if (old && std::getline(old, said) && said == s.spec() && fs::exists(index)) return index;
  fs::create_directories(dir);
  fmt::print(stderr, "bench_inspect: writing {} under {} (once)\n", s.spec(), dir.string());
  std::string weight_map;
  for (Eigen::Index shard = 0; shard < s.shards; ++shard) {
    const std::string file = s.shards > 1 ? fmt::format("model-{:05d}-of-{:05d}.safetensors", shard + 1, s.shards) : "model.safetensors";
    std::vector<SafetensorsOutput> tensors;
    for (Eigen::Index l = shard * s.layers / s.shards; l < (shard + 1) * s.layers / s.shards; ++l)
      for (const char* which : {"q", "k"}) {
        SafetensorsOutput t;
        t.name = fmt::format("model.layers.{}.self_attn.{}_proj.weight", l, which);
        t.dtype = SafetensorsDtype::BF16;
        t.shape = {static_cast<std::uint64_t>(s.heads * s.d_k), static_cast<std::uint64_t>(s.d)};
        const std::uint64_t tensor_seed = derive_seed(seed, static_cast<std::uint64_t>(2 * l + (which[0] == 'k')));
        t.bytes = [t, tensor_seed] {
          Rng rng(tensor_seed);
          std::vector<float> v(t.shape[0] * t.shape[1]);
          for (float& x : v) x = static_cast<float>(0.1 * rng.uniform() - 0.05);
          return encode_safetensors_values(std::span<const float>(v), SafetensorsDtype::BF16);
        };
        weight_map += fmt::format("{}\"{}\": \"{}\"", weight_map.empty() ? "" : ", ", t.name, file);
        tensors.push_back(std::move(t));
      }
    write_safetensors(dir / file, tensors);
  }
  if (s.shards > 1) write_file_atomically(index, fmt::format("{{\"metadata\": {{}}, \"weight_map\": {{{}}}}}\n", weight_map));
  write_file_atomically(dir / "config.json", fmt::format("{{\"model_type\": \"llama\", \"hidden_size\": {}, \"num_attention_heads\": {}, "
                                                         "\"num_key_value_heads\": {}, \"num_hidden_layers\": {}}}\n",
                                                         s.d, s.heads, s.heads, s.layers));
  write_file_atomically(dir / "spec.txt", s.spec() + "\n");
  return index;
}

// Reads every file of the checkpoint once, untimed, so the timed run finds them in the page cache as a
// second inspection would (the first read of 2 GiB from disk measures the disk, not attnlab).
std::uintmax_t warm(const fs::path& dir) {
  std::uintmax_t bytes = 0;
  std::vector<char> buffer(1 << 20);
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".safetensors") {
      std::ifstream in(e.path(), std::ios::binary);
      while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0) bytes += static_cast<std::uintmax_t>(in.gcount());
    }
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  ExperimentCli cli("bench_inspect", "attnlab_inspect on LLaMA-shaped checkpoints up to 7B's attention (d 4096, 32 layers x 32 heads)");
  std::string work;
  cli.add_text("--work", work, "directory for the synthetic checkpoints (default: bench-inspect beside the build's bin/)", "DIR");
  cli.parse(argc, argv);
  return run_experiment(cli.name(), [&] {
    const bool quick = cli.options().quick;
    const fs::path bin = fs::canonical("/proc/self/exe").parent_path();
    const fs::path root = work.empty() ? bin.parent_path() / "bench-inspect" : fs::path(work);
    const int threads = cli.options().threads;
    Rng rng(derive_seed(cli.options().seed, 37));
    bench::GemmProbe probe = bench::ceiling_probe(quick, threads, rng);
    bench::full_ceiling(probe, quick, " at the start");
    CsvTable table({text_col("size"), int_col("layers"), int_col("d"), int_col("heads"), int_col("kv_heads"), int_col("d_k"),
                    text_col("dtype"), int_col("shards"), real_col("file_mib"), int_col("threads"), real_col("wall_s"),
                    real_col("peak_rss_mib"), real_col("compute_s"), real_col("flops"), real_col("gflops"), real_col("gemm_gflops"),
                    real_col("gemm_share"), real_col("gemm_before_gflops"), real_col("gemm_after_gflops")});
    for (const Size& s : sizes(quick)) {
      const fs::path dir = root / (quick ? "quick" : "full") / s.name;
      const fs::path model = ensure_checkpoint(dir, s, cli.options().seed);
      const double mib = static_cast<double>(warm(dir)) / (1 << 20);
      const fs::path out = root / "out" / s.name;
      const auto before = bench::beside_ceiling(probe);
      const auto start = std::chrono::steady_clock::now();
      const ProcessResult r = run_process((bin / "attnlab_inspect").string(),
                                          {"--layout", "llama", model.string(), "--out", out.string(), "--threads", std::to_string(threads), "--no-figure"}, true);
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const auto after = bench::beside_ceiling(probe);
      if (r.exit_status != 0) throw std::runtime_error(fmt::format("attnlab_inspect failed on {} (exit {}): {}", model.string(), r.exit_status, r.output));
      const TableReader timing(out / "inspect_timing.csv");
      double seconds = 0, flops = 0;
      for (std::size_t i = 0; i < timing.rows(); ++i) seconds += timing.real(i, "seconds"), flops += timing.real(i, "flops");
      const bench::RowCeiling c = bench::row_ceiling(before, after);
      const double gflops = flops / seconds * 1e-9;
      table.add_row({s.name, s.layers, s.d, s.heads, s.heads, s.d_k, "BF16", s.shards, mib, threads, wall, r.peak_rss_bytes / (1 << 20),
                     seconds, flops, gflops, c.gemm, gflops / c.gemm, c.before_best, c.after_best});
      fmt::print(stderr, "bench_inspect {}: {:.2f} s whole, {:.1f} MiB peak, factored path {:.1f} GFLOP/s = {:.0f}% of sgemm {:.0f}\n", s.name,
                 wall, r.peak_rss_bytes / (1 << 20), gflops, 100 * gflops / c.gemm, c.gemm);
    }
    bench::full_ceiling(probe, quick, " at the end");
    table.write(cli.output_path("bench_inspect.csv"));
  });
}
