// Eigen's GEMM blocking pinned (core/gemm_blocking.hpp): training bits that do not depend on the cache sizes
// the host reports. Caught as a regression: the committed one-epoch tables differed from a rerun on another
// machine of the same instruction set from the first update on (step 1's loss in its 10th digit), because
// Eigen chose the inner blocking of the weight gradients from a different L1 size.
#include <doctest/doctest.h>

#include <Eigen/Core>
#include <cstdint>
#include <cstring>
#include <vector>

#include "attnlab/core/gemm_blocking.hpp"
#include "attnlab/core/rng.hpp"
#include "attnlab/model/trainer.hpp"
#include "attnlab/model/vit.hpp"
#include "support.hpp"

using namespace attnlab;

namespace {

// Two hosts as different as real ones get: a 16 KiB L1 with small L2 and L3, and a 64 KiB L1 with the
// 320 MiB "L3" a virtual machine reported here. Eigen's inner block kc grows with the L1 it believes in, and
// on every vector width it stays below the 1,568 token rows of a chunk's weight gradients for all three.
struct HostCaches {
  std::ptrdiff_t l1, l2, l3;
};
constexpr HostCaches kSmallHost{16 * 1024, 256 * 1024, 8 * 1024 * 1024};
constexpr HostCaches kLargeHost{64 * 1024, 2 * 1024 * 1024, 320 * 1024 * 1024};

// The bits of two training steps of the default ViT (exact attention, batch 16: two chunks of 8 images) on
// seeded random images: both losses and every parameter afterwards, as raw bytes.
std::vector<unsigned char> two_steps_bits(std::uint64_t seed) {
  Rng rng(seed);
  constexpr std::int64_t kImages = 32;
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(kImages * 28 * 28)), labels(kImages);
  for (auto& p : pixels) p = static_cast<std::uint8_t>(rng.next_u64() % 256);
  for (auto& l : labels) l = static_cast<std::uint8_t>(rng.next_u64() % 10);
  const ImageSet data{pixels, labels, 28};
  ViTConfig config;
  config.seed = seed;
  ViT<float> model(config);
  Trainer<float> trainer(model);
  std::vector<std::int64_t> first(16), second(16);
  for (std::int64_t i = 0; i < 16; ++i) first[static_cast<std::size_t>(i)] = i, second[static_cast<std::size_t>(i)] = 16 + i;
  const double losses[2] = {trainer.step(data, first, 5e-4), trainer.step(data, second, 5e-4)};
  std::vector<unsigned char> bits(sizeof losses);
  std::memcpy(bits.data(), losses, sizeof losses);
  for (const auto& t : model.parameter_tensors()) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(t.data);
    bits.insert(bits.end(), bytes, bytes + t.size() * static_cast<Eigen::Index>(sizeof(float)));
  }
  return bits;
}

std::vector<unsigned char> on_host(const HostCaches& host, bool pin, std::uint64_t seed) {
  Eigen::setCpuCacheSizes(host.l1, host.l2, host.l3);
  if (pin) pin_gemm_blocking();
  return two_steps_bits(seed);
}

}  // namespace

TEST_CASE("GEMM blocking is pinned before main(): two training steps give the same bits whatever cache sizes the host reports") {
  const std::uint64_t seed = attnlab::testing::test_seed(20251130);
  INFO("seed " << seed);
  // The static initialiser ran before this check (it is linked into every program).
  CHECK(gemm_blocking_pinned());
  CHECK(Eigen::l1CacheSize() == kPinnedL1CacheBytes);

  const auto small = on_host(kSmallHost, true, seed), large = on_host(kLargeHost, true, seed);
  CHECK(small == large);
  // The check can fail: without the pin the same two hosts give different bits (the blocking decides the
  // order of the weight gradients' sums). If this ever passes unpinned, the check above tests nothing.
  const auto small_free = on_host(kSmallHost, false, seed), large_free = on_host(kLargeHost, false, seed);
  CHECK_MESSAGE(small_free != large_free, "unpinned runs on the two hosts agree: this check could not catch a missing pin");
  pin_gemm_blocking();  // leave the process as it found it
  CHECK(gemm_blocking_pinned());
  CHECK(small == on_host(kLargeHost, true, seed));
}
