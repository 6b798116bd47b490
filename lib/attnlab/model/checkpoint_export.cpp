// An attnlab checkpoint loaded as a model, and exported to safetensors (checkpoint_export.hpp).
#include "attnlab/model/checkpoint_export.hpp"

#include <fmt/format.h>
#include <vector>

#include "attnlab/attention/trainable.hpp"
#include "attnlab/io/safetensors.hpp"
#include "attnlab/model/checkpoint.hpp"

namespace attnlab {

namespace {

// Builds the model a manifest describes and loads the directory into it; a manifest whose model this build cannot
// make (an unknown method, say) is the checkpoint's fault, reported as CheckpointError.
template <typename Model, typename Make>
std::unique_ptr<Model> build_and_load(const std::filesystem::path& dir, Make make) {
  std::unique_ptr<Model> model;
  try {
    model = make();
  } catch (const std::invalid_argument& e) {
    throw CheckpointError(fmt::format("checkpoint {}: manifest.json describes no model this build can make: {}", dir.string(), e.what()));
  }
  load_checkpoint(*model, dir);
  return model;
}

}  // namespace

std::unique_ptr<ViT<float>> load_vit_checkpoint(const std::filesystem::path& dir) {
  const CheckpointInfo info = read_checkpoint_info(dir);
  return build_and_load<ViT<float>>(dir, [&] {
    return std::make_unique<ViT<float>>(info.config, [](const TrainableAttentionConfig& c) { return make_trainable_attention<float>(c); });
  });
}

std::unique_ptr<RecallModel<float>> load_recall_checkpoint(const std::filesystem::path& dir) {
  const RecallCheckpointInfo info = read_recall_checkpoint_info(dir);
  return build_and_load<RecallModel<float>>(dir, [&] { return std::make_unique<RecallModel<float>>(info.config); });
}

LoadedCheckpoint load_attnlab_checkpoint(const std::filesystem::path& dir) {
  LoadedCheckpoint c;
  if (read_checkpoint_format(dir) == kRecallCheckpointFormat) {
    c.recall = load_recall_checkpoint(dir);
    c.step = read_recall_checkpoint_info(dir).step;
  } else {
    c.vit = load_vit_checkpoint(dir);
    c.step = read_checkpoint_info(dir).step;
  }
  return c;
}

const std::vector<BlockParams<float>>& LoadedCheckpoint::blocks() const {
  return vit ? vit->params().blocks : recall->params().blocks;
}

BlockShape LoadedCheckpoint::shape() const { return vit ? vit->config().blocks() : recall->config().blocks(); }

std::vector<TensorRef<float>> LoadedCheckpoint::tensors() const {
  // The tensor lists are the models' own (non-const accessors: they hand out writable references).
  auto list = [](auto& model) {
    std::vector<TensorRef<float>> out = model.parameter_tensors();
    for (const auto& b : model.buffer_tensors()) out.push_back(b);
    return out;
  };
  return vit ? list(*vit) : list(*recall);
}

std::map<std::string, std::string> LoadedCheckpoint::metadata() const {
  auto common = [this](const char* format, int version, const auto& config) {
    return std::map<std::string, std::string>{{"format", format},
                                              {"version", std::to_string(version)},
                                              {"method", config.attention.method},
                                              {"step", std::to_string(step)},
                                              {"seed", std::to_string(config.seed)},
                                              {"key_width", std::to_string(config.key_head_width())}};
  };
  std::map<std::string, std::string> meta;
  if (vit) {
    meta = common(kCheckpointFormat, kCheckpointVersion, vit->config());
    for (const auto& [key, value] : checkpoint_widths(vit->config())) meta[key] = std::to_string(value);
  } else {
    meta = common(kRecallCheckpointFormat, kRecallCheckpointVersion, recall->config());
    for (const auto& [key, value] : recall_checkpoint_widths(recall->config())) meta[key] = std::to_string(value);
  }
  return meta;
}

std::size_t export_checkpoint_safetensors(const std::filesystem::path& dir, const std::filesystem::path& path) {
  const LoadedCheckpoint model = load_attnlab_checkpoint(dir);
  std::vector<SafetensorsOutput> out;
  for (const TensorRef<float>& t : model.tensors()) {
    SafetensorsOutput o;
    o.name = t.name;
    o.dtype = SafetensorsDtype::F32;
    o.shape = t.is_vector ? std::vector<std::uint64_t>{static_cast<std::uint64_t>(t.rows)}
                          : std::vector<std::uint64_t>{static_cast<std::uint64_t>(t.rows), static_cast<std::uint64_t>(t.cols)};
    o.bytes = [t] {
      // Column-major storage -> C order: entry (r, c) at r * cols + c, as the .npy files hold it.
      std::vector<float> c_order(static_cast<std::size_t>(t.size()));
      for (Eigen::Index r = 0; r < t.rows; ++r)
        for (Eigen::Index k = 0; k < t.cols; ++k) c_order[static_cast<std::size_t>(r * t.cols + k)] = t.data[k * t.rows + r];
      return encode_safetensors_values(std::span<const float>(c_order), SafetensorsDtype::F32);
    };
    out.push_back(std::move(o));
  }
  write_safetensors(path, out, model.metadata());
  return out.size();
}

}  // namespace attnlab
