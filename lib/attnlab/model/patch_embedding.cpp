// Patch embedding: patchify, forward and backward.
#include "attnlab/model/patch_embedding.hpp"

#include <stdexcept>

#include "attnlab/model/linear.hpp"

namespace attnlab {

template <typename T>
void patchify(std::span<const std::uint8_t> pixels, std::span<const std::int64_t> images, int side, int patch,
              int stride, int pad, Mat<T>& out) {
  const int span = side + 2 * pad - patch;
  if (side <= 0 || patch <= 0 || stride <= 0 || pad < 0 || pad >= patch || span < 0 || span % stride != 0)
    throw std::invalid_argument("patchify: " + std::to_string(patch) + "x" + std::to_string(patch) +
                                " windows every " + std::to_string(stride) + " pixels do not tile a " +
                                std::to_string(side) + "x" + std::to_string(side) + " image padded by " +
                                std::to_string(pad));
  const Eigen::Index grid = span / stride + 1, n = grid * grid, B = static_cast<Eigen::Index>(images.size());
  const auto image_size = static_cast<std::size_t>(side) * static_cast<std::size_t>(side);
  out.resize(B * n, static_cast<Eigen::Index>(patch) * patch);
  const double scale = 1.0 / (255.0 * kPixelStd);
  // Computed in double and rounded once, so float and double see the same input to 1/2 ulp.
  const T background = static_cast<T>(-kPixelMean / kPixelStd);
  for (Eigen::Index b = 0; b < B; ++b) {
    const auto index = static_cast<std::size_t>(images[static_cast<std::size_t>(b)]);
    if ((index + 1) * image_size > pixels.size()) throw std::out_of_range("patchify: image index out of range");
    const std::uint8_t* img = pixels.data() + index * image_size;
    for (Eigen::Index gr = 0; gr < grid; ++gr)
      for (Eigen::Index gc = 0; gc < grid; ++gc)
        for (int r = 0; r < patch; ++r)
          for (int c = 0; c < patch; ++c) {
            const Eigen::Index y = gr * stride + r - pad, x = gc * stride + c - pad;
            const bool inside = y >= 0 && y < side && x >= 0 && x < side;
            out(b * n + gr * grid + gc, r * patch + c) =
                inside ? static_cast<T>(img[static_cast<std::size_t>(y * side + x)] * scale - kPixelMean / kPixelStd)
                       : background;
          }
  }
}

template <typename T>
void patch_embedding_forward(const Mat<T>& p, const Mat<T>& W, const Vec<T>& b, const Mat<T>& pos, Mat<T>& e) {
  // pass 1: the linear map of each patch (a GEMM with a tiny inner dimension P).
  linear_forward(p, W, b, e);
  // pass 2: each image's n tokens get the same n learned positions.
  const Eigen::Index n = pos.rows();
  for (Eigen::Index i = 0; i < e.rows() / n; ++i) e.middleRows(i * n, n) += pos;
}

template <typename T>
void patch_embedding_backward(const Mat<T>& p, const Mat<T>& de, Mat<T>& dW, Vec<T>& db, Mat<T>& dpos) {
  const Eigen::Index n = dpos.rows();
  // The position of token t is shared by every image: its gradient is the sum over images, in image order.
  for (Eigen::Index i = 0; i < de.rows() / n; ++i) dpos += de.middleRows(i * n, n);
  dW.noalias() += p.transpose() * de;
  db.noalias() += de.colwise().sum().transpose();
}

template void patchify<float>(std::span<const std::uint8_t>, std::span<const std::int64_t>, int, int, int, int,
                              Mat<float>&);
template void patchify<double>(std::span<const std::uint8_t>, std::span<const std::int64_t>, int, int, int, int,
                               Mat<double>&);
template void patch_embedding_forward<float>(const Mat<float>&, const Mat<float>&, const Vec<float>&, const Mat<float>&,
                                             Mat<float>&);
template void patch_embedding_forward<double>(const Mat<double>&, const Mat<double>&, const Vec<double>&,
                                              const Mat<double>&, Mat<double>&);
template void patch_embedding_backward<float>(const Mat<float>&, const Mat<float>&, Mat<float>&, Vec<float>&,
                                              Mat<float>&);
template void patch_embedding_backward<double>(const Mat<double>&, const Mat<double>&, Mat<double>&, Vec<double>&,
                                               Mat<double>&);

}  // namespace attnlab
