// Copying a ViT tensor by tensor.
#include "attnlab/model/vit_copy.hpp"

#include <stdexcept>

namespace attnlab {

namespace {

template <typename To, typename From>
void copy_tensors(const std::vector<TensorRef<From>>& from, const std::vector<TensorRef<To>>& to) {
  if (from.size() != to.size()) throw std::logic_error("copy: the copy has another tensor list");
  for (std::size_t i = 0; i < from.size(); ++i) {
    if (from[i].name != to[i].name || from[i].size() != to[i].size())
      throw std::logic_error("copy: tensor " + from[i].name + " does not match the copy's " + to[i].name);
    for (Eigen::Index k = 0; k < from[i].size(); ++k) to[i].data[k] = static_cast<To>(from[i].data[k]);
  }
}

}  // namespace

template <typename To, typename From>
std::unique_ptr<ViT<To>> copy_vit(ViT<From>& source) {
  auto copy = std::make_unique<ViT<To>>(source.config());
  copy_tensors(source.parameter_tensors(), copy->parameter_tensors());
  copy_tensors(source.buffer_tensors(), copy->buffer_tensors());
  return copy;
}

template <typename To, typename From>
std::unique_ptr<RecallModel<To>> copy_recall_model(RecallModel<From>& source) {
  auto copy = std::make_unique<RecallModel<To>>(source.config());
  copy_tensors(source.parameter_tensors(), copy->parameter_tensors());
  copy_tensors(source.buffer_tensors(), copy->buffer_tensors());
  return copy;
}

template std::unique_ptr<ViT<float>> copy_vit<float, float>(ViT<float>&);
template std::unique_ptr<ViT<double>> copy_vit<double, float>(ViT<float>&);
template std::unique_ptr<ViT<float>> copy_vit<float, double>(ViT<double>&);
template std::unique_ptr<ViT<double>> copy_vit<double, double>(ViT<double>&);
template std::unique_ptr<RecallModel<float>> copy_recall_model<float, float>(RecallModel<float>&);
template std::unique_ptr<RecallModel<double>> copy_recall_model<double, float>(RecallModel<float>&);

}  // namespace attnlab
