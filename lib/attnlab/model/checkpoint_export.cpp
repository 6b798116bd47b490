// An attnlab checkpoint loaded as a model, and exported to safetensors (checkpoint_export.hpp).
#include "attnlab/model/checkpoint_export.hpp"

#include <fmt/format.h>
#include <vector>

#include "attnlab/attention/trainable.hpp"
#include "attnlab/io/safetensors.hpp"
#include "attnlab/model/checkpoint.hpp"

namespace attnlab {

std::unique_ptr<ViT<float>> load_vit_checkpoint(const std::filesystem::path& dir) {
  const CheckpointInfo info = read_checkpoint_info(dir);
  std::unique_ptr<ViT<float>> model;
  try {
    model = std::make_unique<ViT<float>>(info.config, [](const TrainableAttentionConfig& c) { return make_trainable_attention<float>(c); });
  } catch (const std::invalid_argument& e) {
    throw CheckpointError(fmt::format("checkpoint {}: manifest.json describes no model this build can make: {}", dir.string(), e.what()));
  }
  load_checkpoint(*model, dir);
  return model;
}

std::map<std::string, std::string> exported_metadata(const ViT<float>& model, std::int64_t step) {
  const ViTConfig& c = model.config();
  std::map<std::string, std::string> meta = {{"format", kCheckpointFormat},
                                             {"version", std::to_string(kCheckpointVersion)},
                                             {"method", c.attention.method},
                                             {"step", std::to_string(step)},
                                             {"seed", std::to_string(c.seed)},
                                             {"key_width", std::to_string(c.key_head_width())}};
  for (const auto& [key, value] : checkpoint_widths(c)) meta[key] = std::to_string(value);
  return meta;
}

std::size_t export_checkpoint_safetensors(const std::filesystem::path& dir, const std::filesystem::path& path) {
  const auto model = load_vit_checkpoint(dir);
  std::vector<TensorRef<float>> tensors = model->parameter_tensors();
  for (const auto& b : model->buffer_tensors()) tensors.push_back(b);
  std::vector<SafetensorsOutput> out;
  for (const TensorRef<float>& t : tensors) {
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
  write_safetensors(path, out, exported_metadata(*model, read_checkpoint_info(dir).step));
  return out.size();
}

}  // namespace attnlab
