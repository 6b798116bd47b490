// Patch embedding with learned positions: images -> tokens (the ViT's first layer).
#pragma once

#include <cstdint>
#include <span>

#include "attnlab/core/matrix.hpp"

namespace attnlab {

// Fashion-MNIST's training-set mean and standard deviation of pixel/255 (fixed constants, vit_spec.md).
inline constexpr double kPixelMean = 0.2860;
inline constexpr double kPixelStd = 0.3530;

// Cuts images into non-overlapping patch x patch squares. pixels: `count` images of side x side uint8,
// row-major, one after another; `images` lists which to take (indices into pixels). Writes
// out (B * n, patch^2), B = images.size(), n = (side / patch)^2: image b's token t = row b * n + t,
// tokens row-major over the patch grid, values row-major inside a patch, each (pixel/255 - mean) / std.
template <typename T>
void patchify(std::span<const std::uint8_t> pixels, std::span<const std::int64_t> images, int side, int patch,
              Mat<T>& out);

// Shapes: p (B * n, P), W (P, D), b (D), pos (n, D) -> e (B * n, D) = p W + b + pos (pos repeated per image).
template <typename T>
void patch_embedding_forward(const Mat<T>& p, const Mat<T>& W, const Vec<T>& b, const Mat<T>& pos, Mat<T>& e);

// Given de (B * n, D): ADDS into dW (P, D), db (D) and dpos (n, D). The pixels need no gradient.
template <typename T>
void patch_embedding_backward(const Mat<T>& p, const Mat<T>& de, Mat<T>& dW, Vec<T>& db, Mat<T>& dpos);

}  // namespace attnlab
