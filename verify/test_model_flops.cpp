// The ViT's counted training FLOPs (model/flops.hpp): a hand count on a tiny model, the default model
// against bench/bench_vit_torch.py's formula, every method's attention by hand, a whole run's count.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "attnlab/attention/trainable.hpp"
#include "attnlab/model/flops.hpp"

using namespace attnlab;

TEST_CASE("vit_training_flops: a tiny model counted by hand") {
  // 4 x 4 images, 2 x 2 windows every 2 pixels, no padding: a 2 x 2 grid, n = 4 tokens of P = 4 pixels;
  // D = 4, 2 heads (d_k 2), one block, MLP 8, 3 classes.
  ViTConfig c;
  c.image = 4;
  c.patch = 2;
  c.stride = 2;
  c.pad = 0;
  c.D = 4;
  c.heads = 2;
  c.layers = 1;
  c.mlp = 8;
  c.classes = 3;
  REQUIRE(c.tokens() == 4);
  // Multiply-adds per image: patches (4 x 4) W (4 x 4): 64; Q, K, V, O (4 x 4)(4 x 4): 4 x 64 = 256;
  // per head Q K^T (4 x 2)(2 x 4): 32 and weights V (4 x 4)(4 x 2): 32, 2 heads: 128; MLP (4 x 4)(4 x 8)
  // and (4 x 8)(8 x 4): 128 + 128 = 256; head (1 x 4)(4 x 3): 12. Total 716 multiply-adds, 1432 FLOPs.
  const ViTForwardFlops f = vit_forward_flops(c);
  CHECK(f.embed == 128);
  CHECK(f.projections == 512);
  CHECK(f.attention == 256);
  CHECK(f.mlp == 512);
  CHECK(f.head == 24);
  CHECK(f.total() == 1432);
  // Training: forward + backward (2 products per forward product) = 3 x 1432 per image.
  CHECK(vit_training_flops(c, 1) == 4296);
  CHECK(vit_training_flops(c, 5) == 5 * 4296);
  CHECK(vit_training_flops(c, 0) == 0);
  c.attention.method = "symmetric";  // the same products (S_w's scores are Q K^T and its transpose)
  CHECK(vit_training_flops(c, 1) == 4296);
}

TEST_CASE("vit_training_flops: the default model equals bench_vit_torch.py's count") {
  // bench/bench_vit_torch.py counted_flops(cfg, batch) with n 196, D 64, mlp 128, L 2, patch 4, classes 10:
  //   per_layer = 2*196*64*64*4 + 2*196*196*64*2 + 2*196*64*128*2 = 22,679,552
  //   forward = 2 * per_layer + 2*196*16*64 + 2*64*10 = 45,761,792;  3 * forward = 137,285,376 per image
  const ViTConfig c;
  CHECK(c.tokens() == 196);
  CHECK(vit_training_flops(c, 1) == 137285376.0);
  CHECK(vit_training_flops(c, 256) == 256 * 137285376.0);  // 35.145 GFLOP per step at the peer's batch
}

TEST_CASE("vit_forward_flops: every trainable method counted from its attention cost, by hand at the default widths") {
  // The default model: n 196, D 64, 4 heads of d 16, 2 blocks. Everything but the attention counts
  // 26,092,800 FLOPs per image (embedding 401,408, projections 12,845,056, MLP 12,845,056, head 1,280);
  // the attention is 2 FLOPs x 4 heads x 2 blocks = 16 times one head's multiply-adds:
  //   linear-elu      2 n d^2 + n d             = 100,352 + 3,136             = 103,488
  //   linear-shen     2 n d^2                   = 100,352
  //   linformer       4 k n d, k = ceil(196/8) = 25: 4 x 25 x 196 x 16      = 313,600
  //   random-fourier  6 n F d + 2 n F, F = 256  = 4,816,896 + 100,352         = 4,917,248
  //   favor           4 n F d + n F             = 3,211,264 + 50,176          = 3,261,440
  //   nystrom         4 n m d + 2 m^2 d + 4 m^3 x 6, m = 64 = 802,816 + 131,072 + 6,291,456 = 7,225,344
  const std::vector<std::pair<std::string, double>> heads = {{"linear-elu", 103488},       {"linear-shen", 100352},
                                                             {"linformer", 313600},        {"random-fourier", 4917248},
                                                             {"favor", 3261440},           {"nystrom", 7225344}};
  for (const auto& [method, multiply_adds] : heads) {
    INFO(method);
    ViTConfig c;
    c.attention.method = method;
    const ViTForwardFlops f = vit_forward_flops(c);
    CHECK(f.attention == 16 * multiply_adds);
    CHECK(f.total() - f.attention == 26092800);
  }
  // Options given explicitly are counted as given: Nystrom with 32 landmarks and 2 iterations.
  ViTConfig c;
  c.attention.method = "nystrom";
  c.attention.landmarks = 32;
  c.attention.pinv_iterations = 2;
  CHECK(vit_forward_flops(c).attention == 16 * (4.0 * 196 * 32 * 16 + 2.0 * 32 * 32 * 16 + 4.0 * 32 * 32 * 32 * 2));
  // Every name the trainer offers has a count; anything else is refused, as are negative batches.
  for (const auto& m : trainable_attention_names()) {
    c = ViTConfig{};
    c.attention.method = m;
    CHECK(vit_training_flops(c, 1) > 0);
  }
  c.attention.method = "softmax";
  CHECK_THROWS_AS(vit_forward_flops(c), std::invalid_argument);
  c.attention.method = "exact";
  CHECK_THROWS_AS(vit_training_flops(c, -1), std::invalid_argument);
}

TEST_CASE("vit_run_flops and softmax_regression_run_flops: epochs of training (3x forward) and evaluation (1x)") {
  const ViTConfig c;
  const double forward = vit_forward_flops(c).total();
  CHECK(vit_run_flops(c, 100, 10, 3) == 3 * (3 * 100 + 10) * forward);
  CHECK(vit_run_flops(c, 0, 0, 3) == 0);
  CHECK_THROWS_AS(vit_run_flops(c, -1, 10, 3), std::invalid_argument);
  CHECK_THROWS_AS(vit_run_flops(c, 1, 10, -3), std::invalid_argument);
  // 784 pixels to 10 classes: 15,680 FLOPs per image forward.
  CHECK(softmax_regression_run_flops(784, 10, 100, 10, 3) == 3 * (3 * 100 + 10) * 15680.0);
  CHECK_THROWS_AS(softmax_regression_run_flops(784, -1, 100, 10, 3), std::invalid_argument);
}
