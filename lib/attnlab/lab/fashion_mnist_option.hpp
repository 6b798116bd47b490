// The --data option of the experiments that train or evaluate the ViT, and the one-line refusal of a
// data set they cannot use (shared by exp_vit_training and exp_trained_attention).
#pragma once

#include <optional>
#include <string>

#include "attnlab/io/idx.hpp"
#include "attnlab/lab/experiment_cli.hpp"

namespace attnlab {

// Adds --data DIR (the four Fashion-MNIST IDX files; `dir` keeps its default, Debian's kFashionMnistDir).
void add_fashion_mnist_option(ExperimentCli& cli, std::string& dir);

// Fashion-MNIST from `dir`, its images checked to be side x side. On a missing or malformed file or
// another image size, prints one line "<experiment>: <problem>" and returns nothing: the caller exits
// with kExitUsage.
std::optional<FashionMnist> load_fashion_mnist_for(const ExperimentCli& cli, const std::string& dir, int side);

}  // namespace attnlab
