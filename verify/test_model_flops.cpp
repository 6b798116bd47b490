// The ViT's counted training FLOPs (model/flops.hpp): a hand count on a tiny model, the default model
// against bench/bench_vit_torch.py's formula, methods without a count refused.
#include <doctest/doctest.h>

#include <stdexcept>

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

TEST_CASE("vit_training_flops: methods without a counted attention cost and negative batches are refused") {
  ViTConfig c;
  for (const char* m : {"linear-elu", "linformer", "nystrom", "favor"}) {
    c.attention.method = m;
    CHECK_THROWS_AS(vit_forward_flops(c), std::invalid_argument);
  }
  c.attention.method = "exact";
  CHECK_THROWS_AS(vit_training_flops(c, -1), std::invalid_argument);
}
