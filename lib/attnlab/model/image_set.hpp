// A labelled set of images, the data the ViT and the linear baseline train on (a view: the caller owns it).
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace attnlab {

// Square uint8 images, row-major, one after another, and one label per image. One of the data sets the
// trainer takes (trainer.hpp): item i is image i, and it has one labelled output row (its logits).
struct ImageSet {
  std::span<const std::uint8_t> pixels;  // count * side * side
  std::span<const std::uint8_t> labels;  // count
  int side = 28;
  std::int64_t count() const { return static_cast<std::int64_t>(labels.size()); }
  // Appends image i's label to `out`; std::out_of_range for an index outside 0 .. count-1.
  void append_labels(std::int64_t i, std::vector<std::uint8_t>& out) const {
    if (i < 0 || i >= count())
      throw std::out_of_range("image index " + std::to_string(i) + " outside 0.." + std::to_string(count() - 1));
    out.push_back(labels[static_cast<std::size_t>(i)]);
  }
};

}  // namespace attnlab
