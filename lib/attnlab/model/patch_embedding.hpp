// Patch embedding with learned positions: images -> tokens (the ViT's first layer).
#pragma once

#include <cstdint>
#include <span>

#include "attnlab/core/matrix.hpp"

namespace attnlab {

// Fashion-MNIST's training-set mean and standard deviation of pixel/255 (fixed constants, vit_spec.md).
inline constexpr double kPixelMean = 0.2860;
inline constexpr double kPixelStd = 0.3530;

// Cuts images into patch x patch windows taken every `stride` pixels from the image surrounded by `pad`
// pixels of value 0 (the background): grid g = (side + 2 pad - patch) / stride + 1 windows per side, which
// overlap when stride < patch. pixels: images of side x side uint8, row-major, one after another; `images`
// lists which to take (indices into pixels). Writes out (B * n, patch^2), B = images.size(), n = g^2:
// image b's token t = row b * n + t, tokens row-major over the grid, values row-major inside a window,
// each (pixel/255 - mean) / std. Throws std::invalid_argument when the windows do not tile the padded
// image exactly (patch >= 1, stride >= 1, 0 <= pad < patch, stride divides side + 2 pad - patch >= 0).
template <typename T>
void patchify(std::span<const std::uint8_t> pixels, std::span<const std::int64_t> images, int side, int patch,
              int stride, int pad, Mat<T>& out);

// Shapes: p (B * n, P), W (P, D), b (D), pos (n, D) -> e (B * n, D) = p W + b + pos (pos repeated per image).
template <typename T>
void patch_embedding_forward(const Mat<T>& p, const Mat<T>& W, const Vec<T>& b, const Mat<T>& pos, Mat<T>& e);

// Given de (B * n, D): ADDS into dW (P, D), db (D) and dpos (n, D). The pixels need no gradient.
template <typename T>
void patch_embedding_backward(const Mat<T>& p, const Mat<T>& de, Mat<T>& dW, Vec<T>& db, Mat<T>& dpos);

}  // namespace attnlab
