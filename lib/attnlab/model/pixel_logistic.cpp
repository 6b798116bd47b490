// The linear baseline: initialisation, forward and backward, and its checkpoint.
#include "attnlab/model/pixel_logistic.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "attnlab/core/rng.hpp"
#include "attnlab/io/atomic_file.hpp"
#include "attnlab/io/npy.hpp"
#include "attnlab/model/classifier_head.hpp"
#include "attnlab/model/linear.hpp"
#include "attnlab/model/patch_embedding.hpp"

namespace attnlab {

namespace {

constexpr double kPixelLogisticInitStd = 0.02;  // vit_spec.md's weight matrices
constexpr const char* kPixelLogisticFormat = "attnlab-pixel-logistic";
constexpr int kPixelLogisticVersion = 1;

}  // namespace

template <typename T>
PixelLogistic<T>::PixelLogistic(int side, Eigen::Index classes, std::uint64_t seed) : side_(side), seed_(seed) {
  if (side < 1 || side > 4096) throw std::invalid_argument(fmt::format("PixelLogistic: side (= {}) must be in 1..4096", side));
  if (classes < 1 || classes > 256)
    throw std::invalid_argument(fmt::format("PixelLogistic: classes (= {}) must be in 1..256", classes));
  Rng rng(seed);
  W_ = gaussian_matrix<T>(static_cast<Eigen::Index>(side) * side, classes, rng, kPixelLogisticInitStd);
  b_ = Vec<T>::Zero(classes);
}

template <typename T>
std::string PixelLogistic<T>::describe() const {
  return fmt::format("none: softmax regression on the {} normalised pixels (logits = x W + b), the linear baseline",
                     W_.rows());
}

template <typename T>
std::vector<TensorRef<T>> PixelLogistic<T>::parameter_tensors() {
  return {{"head.W", W_.data(), W_.rows(), W_.cols(), false}, {"head.b", b_.data(), b_.rows(), 1, true}};
}

template <typename T>
std::vector<TensorRef<T>> PixelLogistic<T>::gradient_tensors(Grads& g) {
  return {{"head.W", g.W.data(), g.W.rows(), g.W.cols(), false}, {"head.b", g.b.data(), g.b.rows(), 1, true}};
}

template <typename T>
typename PixelLogistic<T>::Grads PixelLogistic<T>::zero_grads() const {
  return {Mat<T>::Zero(W_.rows(), W_.cols()), Vec<T>::Zero(b_.rows())};
}

template <typename T>
void PixelLogistic<T>::set_inputs(Activations& act, std::span<const std::uint8_t> pixels, int side,
                                  std::span<const std::int64_t> images) const {
  if (side != side_) throw std::invalid_argument(fmt::format("PixelLogistic: images of side {}, the model's is {}", side, side_));
  // One window covering the whole image: one "token" of side^2 normalised pixels per image, row-major.
  patchify<T>(pixels, images, side, side, side, 0, act.pixels);
}

template <typename T>
double PixelLogistic<T>::forward_backward(Activations& act, std::span<const std::uint8_t> labels, double scale,
                                          Grads* grads) const {
  // pass 1: logits (B, C) = x W + b.
  linear_forward(act.pixels, W_, b_, act.logits);
  if (labels.empty()) return 0.0;
  // pass 2: the loss and, training, dL/dlogits.
  const double loss = cross_entropy(act.logits, labels, scale, grads != nullptr ? &act.dlogits : nullptr);
  // backward: dW += x^T dlogits, db += column sums (the pixels need no gradient).
  if (grads != nullptr) linear_backward<T>(act.pixels, W_, act.dlogits, nullptr, grads->W, grads->b);
  return loss;
}

template <typename T>
void save_pixel_logistic(const PixelLogistic<T>& model, const std::filesystem::path& dir, std::int64_t step) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  ensure_writable_directory(dir);
  std::string params;
  for (auto [name, a] : {std::pair{"head.W", to_npy(model.W())}, std::pair{"head.b", to_npy(model.b())}}) {
    a.dtype = NpyDtype::float32;
    const std::string file = std::string(name) + ".npy";
    write_npy(dir / file, a);
    params += fmt::format("{}    {{\"name\": \"{}\", \"file\": \"{}\", \"shape\": [{}], \"dtype\": \"float32\", \"kind\": \"parameter\"}}",
                          params.empty() ? "" : ",\n", name, file, fmt::join(a.shape, ", "));
  }
  write_file_atomically(dir / "manifest.json",
                        fmt::format("{{\n  \"format\": \"{}\",\n  \"version\": {},\n  \"method\": \"{}\",\n  \"method_description\": "
                                    "\"{}\",\n  \"image\": {},\n  \"classes\": {},\n  \"seed\": {},\n  \"step\": {},\n  "
                                    "\"parameters\": [\n{}\n  ]\n}}\n",
                                    kPixelLogisticFormat, kPixelLogisticVersion, kPixelLogisticBaseline, model.describe(), model.side(), model.classes(),
                                    model.seed(), step, params));
}

template class PixelLogistic<float>;
template class PixelLogistic<double>;
template void save_pixel_logistic<float>(const PixelLogistic<float>&, const std::filesystem::path&, std::int64_t);
template void save_pixel_logistic<double>(const PixelLogistic<double>&, const std::filesystem::path&, std::int64_t);

}  // namespace attnlab
