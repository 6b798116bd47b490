// A checkpoint's attention weights read head by head (qk_checkpoint.hpp).
#include "attnlab/model/qk_checkpoint.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdexcept>
#include <vector>

#include "attnlab/io/printable.hpp"
#include "attnlab/io/safetensors_checkpoint.hpp"
#include "attnlab/model/checkpoint_export.hpp"

namespace attnlab {

namespace {

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// A safetensors checkpoint under a layout. out x in weights are read head by head (rows h d_k .. of the
// (heads d_k, d) tensor: exactly the bytes of W_Q,h^T, which read in C order fill a column-major d x d_k
// matrix); in x out and fused weights a layer at a time (a head's columns are strided through the tensor).
class SafetensorsQk : public QkCheckpoint {
 public:
  SafetensorsQk(SafetensorsCheckpoint c, const QkLayoutOptions& options) : c_(std::move(c)) {
    plan_ = plan_qk_layout(c_, options);
    path_ = c_.path();
  }

  void load_layer(Eigen::Index l, bool in_double) override {
    layer_ = l;
    in_double_ = in_double;
    if (in_double) load<double>(l, d_);
    else load<float>(l, f_);
  }
  void head(Eigen::Index h, HeadWeights<float>& out) const override { read_head(h, f_, false, out); }
  void head(Eigen::Index h, HeadWeights<double>& out) const override { read_head(h, d_, true, out); }

 private:
  // The loaded layer in precision T: whole weights (in x out storage only) and biases (empty when absent).
  template <typename T>
  struct Layer {
    RowMat<T> q, k;  // (d, q outputs), (d, k outputs); fused: q holds Q | K | V, k stays empty
    Vec<T> qb, kb;
  };

  template <typename T>
  Vec<T> read_vector(const std::string& name) const {
    if (name.empty()) return {};
    const auto& [file, t] = c_.locate(name);
    Vec<T> v(static_cast<Eigen::Index>(t.elements()));
    file.read_rows(t, 0, t.rows(), v.data());
    return v;
  }
  template <typename T>
  RowMat<T> read_matrix(const std::string& name) const {
    const auto& [file, t] = c_.locate(name);
    RowMat<T> m(static_cast<Eigen::Index>(t.shape[0]), static_cast<Eigen::Index>(t.shape[1]));
    file.read_rows(t, 0, t.rows(), m.data());
    return m;
  }

  template <typename T>
  void load(Eigen::Index l, Layer<T>& layer) {
    const auto i = static_cast<std::size_t>(l);
    f_ = Layer<float>{}, d_ = Layer<double>{};  // the previous layer's memory goes first (`layer` is one of them)
    layer.qb = read_vector<T>(plan_.q_bias[i]);
    layer.kb = read_vector<T>(plan_.k_bias[i]);
    if (plan_.storage == QkStorage::out_in) return;
    layer.q = read_matrix<T>(plan_.q[i]);
    if (plan_.storage == QkStorage::in_out) layer.k = read_matrix<T>(plan_.k[i]);
  }

  template <typename T>
  void read_head(Eigen::Index h, const Layer<T>& layer, bool in_double, HeadWeights<T>& out) const {
    if (layer_ < 0 || in_double != in_double_) throw std::logic_error("QkCheckpoint::head: load_layer first, in this precision");
    if (h < 0 || h >= plan_.heads) throw std::logic_error("QkCheckpoint::head: no head " + std::to_string(h));
    const Eigen::Index d = plan_.d, dk = plan_.d_k, kv = plan_.kv_head(h);
    const auto i = static_cast<std::size_t>(layer_);
    // Column offsets of the head's Q and K within the stored outputs (fused: K after all of Q).
    const Eigen::Index q_at = h * dk, k_at = (plan_.storage == QkStorage::fused_qkv_in_out ? plan_.heads * dk : 0) + kv * dk;
    if (plan_.storage == QkStorage::out_in) {
      out.wq.resize(d, dk);
      out.wk.resize(d, dk);
      const auto& [qf, qt] = c_.locate(plan_.q[i]);
      qf.read_rows(qt, static_cast<std::uint64_t>(q_at), static_cast<std::uint64_t>(dk), out.wq.data());
      const auto& [kf, kt] = c_.locate(plan_.k[i]);
      kf.read_rows(kt, static_cast<std::uint64_t>(k_at), static_cast<std::uint64_t>(dk), out.wk.data());
    } else {
      out.wq = layer.q.middleCols(q_at, dk);
      out.wk = (plan_.storage == QkStorage::fused_qkv_in_out ? layer.q : layer.k).middleCols(k_at, dk);
    }
    out.bq = layer.qb.size() ? Vec<T>(layer.qb.segment(q_at, dk)) : Vec<T>(Vec<T>::Zero(dk));
    out.bk = layer.kb.size() ? Vec<T>(layer.kb.segment(k_at, dk)) : Vec<T>(Vec<T>::Zero(dk));
  }

  SafetensorsCheckpoint c_;
  Eigen::Index layer_ = -1;
  bool in_double_ = false;
  Layer<float> f_;
  Layer<double> d_;
};

// An attnlab checkpoint directory, of the ViT or of the recall model: the model loaded whole (float32, exact in either
// precision).
class AttnlabQk : public QkCheckpoint {
 public:
  explicit AttnlabQk(const std::filesystem::path& dir) : model_(load_attnlab_checkpoint(dir)) {
    path_ = dir;
    const BlockShape c = model_.shape();
    plan_.layout = "attnlab";
    plan_.storage = QkStorage::in_out;
    plan_.layers = c.layers;
    plan_.d = c.D;
    plan_.heads = plan_.kv_heads = c.heads;
    plan_.d_k = c.key_width;
    plan_.heads_from = "manifest.json";
    plan_.dtypes = {"F32"};
    for (Eigen::Index l = 0; l < c.layers; ++l)
      for (const auto& [names, what] : {std::pair{&plan_.q, "Wq"}, {&plan_.k, "Wk"}, {&plan_.q_bias, "bq"}, {&plan_.k_bias, "bk"}})
        names->push_back(fmt::format("block{}.attn.{}", l, what));
  }

  void load_layer(Eigen::Index l, bool) override { layer_ = l; }
  void head(Eigen::Index h, HeadWeights<float>& out) const override { read_head(h, out); }
  void head(Eigen::Index h, HeadWeights<double>& out) const override { read_head(h, out); }

 private:
  template <typename T>
  void read_head(Eigen::Index h, HeadWeights<T>& out) const {
    if (layer_ < 0 || h < 0 || h >= plan_.heads) throw std::logic_error("QkCheckpoint::head: load_layer first; no head " + std::to_string(h));
    const MhaParams<float>& p = model_.blocks()[static_cast<std::size_t>(layer_)].attn;
    const Eigen::Index dk = plan_.d_k;
    out.wq = p.Wq.middleCols(h * dk, dk).template cast<T>();
    out.wk = p.Wk.middleCols(h * dk, dk).template cast<T>();
    out.bq = p.bq.segment(h * dk, dk).template cast<T>();
    out.bk = p.bk.segment(h * dk, dk).template cast<T>();
  }

  LoadedCheckpoint model_;
  Eigen::Index layer_ = -1;
};

}  // namespace

std::unique_ptr<QkCheckpoint> QkCheckpoint::open(const std::filesystem::path& path, const QkLayoutOptions& options) {
  std::error_code ec;
  if ((options.layout == "attnlab" || options.layout == "auto") && std::filesystem::exists(path / "manifest.json", ec)) {
    if (options.prefix || options.heads > 0 || options.kv_heads > 0)
      throw QkLayoutError("an attnlab checkpoint directory names its own tensors and heads: --prefix, --heads and --kv-heads do not apply");
    return std::make_unique<AttnlabQk>(path);
  }
  // A run's checkpoints directory (checkpoints/<method>/) holds one checkpoint per seed: name them, rather than
  // speak of *.safetensors files the user never meant.
  if (options.layout == "attnlab" && std::filesystem::is_directory(path, ec) && !std::filesystem::exists(path / "model.safetensors", ec)) {
    std::vector<std::string> runs;
    for (std::filesystem::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
      if (std::filesystem::exists(it->path() / "manifest.json", ec)) runs.push_back(it->path().filename().string());
    std::sort(runs.begin(), runs.end());
    if (!runs.empty())
      throw QkLayoutError(fmt::format("{}: not an attnlab checkpoint (no manifest.json), but {} of its directories are ({}): give one, "
                                      "e.g. {}",
                                      escaped(path.string(), true), runs.size(), escaped(fmt::format("{}", fmt::join(runs, ", ")), true),
                                      escaped((path / runs.front()).string(), true)));
  }
  return std::make_unique<SafetensorsQk>(SafetensorsCheckpoint::open(path), options);
}

}  // namespace attnlab
