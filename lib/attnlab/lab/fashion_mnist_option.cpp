// The --data option of the ViT experiments (fashion_mnist_option.hpp).
#include "attnlab/lab/fashion_mnist_option.hpp"

#include <fmt/format.h>

namespace attnlab {

void add_fashion_mnist_option(ExperimentCli& cli, std::string& dir) {
  cli.add_text("--data", dir, "directory with the four Fashion-MNIST IDX files (gzip)", "DIR");
}

std::optional<FashionMnist> load_fashion_mnist_for(const ExperimentCli& cli, const std::string& dir, int side) {
  FashionMnist data;
  try {
    data = load_fashion_mnist(dir);
  } catch (const IdxError& e) {
    fmt::print(stderr, "{}: {}\n", cli.name(), e.what());
    return std::nullopt;
  }
  for (const IdxImages* images : {&data.train_images, &data.test_images})
    if (images->rows != side || images->cols != side) {
      fmt::print(stderr, "{}: {}: images are not {} x {}\n", cli.name(), dir, side, side);
      return std::nullopt;
    }
  return data;
}

}  // namespace attnlab
