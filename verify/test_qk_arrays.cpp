// Weights in memory as a QkCheckpoint (model/qk_arrays.hpp) against the same weights in a safetensors file under the
// custom layout: the same plan, the same heads bit for bit in either storage and with strides; the refusals. And
// --layout auto (detect_qk_layout): the one layout whose names a checkpoint has.
#include <doctest/doctest.h>

#include <Eigen/Core>
#include <cmath>
#include <limits>
#include <vector>

#include "attnlab/core/rng.hpp"
#include "attnlab/io/safetensors.hpp"
#include "attnlab/io/safetensors_checkpoint.hpp"
#include "attnlab/model/qk_arrays.hpp"
#include "attnlab/model/qk_checkpoint.hpp"
#include "attnlab/model/qk_layout.hpp"
#include "support.hpp"

using namespace attnlab;
using attnlab::testing::ScratchDir;

namespace {

const std::uint64_t kArraysSeed = attnlab::testing::test_seed(20260302);  // ATTNLAB_TEST_SEED overrides it

// A (rows, cols) C-order float matrix of N(0, 1) values.
std::vector<float> gaussian(std::size_t count, Rng& rng) {
  std::vector<float> v(count);
  for (float& x : v) x = static_cast<float>(rng.normal());
  return v;
}

SafetensorsOutput tensor(const std::string& name, std::vector<std::uint64_t> shape, const std::vector<float>& values) {
  return {name, SafetensorsDtype::F32, std::move(shape),
          [values] { return encode_safetensors_values(std::span<const float>(values), SafetensorsDtype::F32); }};
}

QkArray c_array(const std::vector<float>& v, std::vector<std::int64_t> shape) {
  std::vector<std::int64_t> strides(shape.size(), 1);
  for (std::size_t i = shape.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * shape[i + 1];
  return {v.data(), QkArrayDtype::f32, std::move(shape), std::move(strides)};
}

}  // namespace

TEST_CASE("qk arrays: the heads and plan of the same weights in a file under the custom layout, in either storage") {
  Rng rng(kArraysSeed);
  const std::int64_t d = 12, heads = 6, kv = 2, dk = 2;
  const auto wq = gaussian(heads * dk * d, rng), wk = gaussian(kv * dk * d, rng), bq = gaussian(heads * dk, rng);
  ScratchDir dir;
  const auto file = dir.path() / "m.safetensors";
  write_safetensors(file, {tensor("Wq.0", {std::uint64_t(heads * dk), std::uint64_t(d)}, wq),
                           tensor("Wk.0", {std::uint64_t(kv * dk), std::uint64_t(d)}, wk), tensor("bq.0", {std::uint64_t(heads * dk)}, bq)});
  QkLayoutOptions o;
  o.layout = "custom", o.q_pattern = "Wq.{l}", o.k_pattern = "Wk.{l}", o.q_bias_pattern = "bq.{l}", o.heads = heads;
  const auto from_file = QkCheckpoint::open(file, o);
  QkArraysSpec s;
  s.wq = c_array(wq, {heads * dk, d});
  s.wk = c_array(wk, {kv * dk, d});
  s.bq = c_array(bq, {heads * dk});
  s.heads = heads;
  QkArrays arrays(s);
  // The x W storage of the same weights: (d, outputs), read through strides (a transposed view of the same memory).
  QkArraysSpec t = s;
  t.transpose = true;
  t.wq = {wq.data(), QkArrayDtype::f32, {d, heads * dk}, {1, d}};
  t.wk = {wk.data(), QkArrayDtype::f32, {d, kv * dk}, {1, d}};
  QkArrays transposed(t);
  for (const QkCheckpoint* c : {static_cast<const QkCheckpoint*>(&arrays), static_cast<const QkCheckpoint*>(&transposed)}) {
    CHECK(c->plan().d == d);
    CHECK(c->plan().heads == heads);
    CHECK(c->plan().kv_heads == kv);
    CHECK(c->plan().d_k == dk);
    CHECK(c->plan().has_q_bias());
    CHECK_FALSE(c->plan().has_k_bias());
  }
  from_file->load_layer(0, false);
  arrays.load_layer(0, false);
  transposed.load_layer(0, false);
  for (Eigen::Index h = 0; h < heads; ++h) {
    HeadWeights<float> a, b, c;
    from_file->head(h, a);
    arrays.head(h, b);
    transposed.head(h, c);
    CHECK((a.wq == b.wq && a.wk == b.wk && a.bq == b.bq && a.bk == b.bk));
    CHECK((a.wq == c.wq && a.wk == c.wk && a.bq == c.bq && a.bk == c.bk));
  }
}

TEST_CASE("qk arrays: shapes that fit the storage asked for in no way, and non-finite weights, are refused") {
  Rng rng(kArraysSeed + 1);
  auto wq = gaussian(8 * 6, rng);
  const auto wk = gaussian(4 * 6, rng);
  QkArraysSpec s;
  s.wq = c_array(wq, {8, 6});
  s.wk = c_array(wk, {6, 4});  // x W storage given as nn.Linear's
  s.heads = 2;
  CHECK_THROWS_WITH_AS(QkArrays{s}, "\"Wk\" has shape [6, 4] but \"Wq\" has [8, 6]: the input widths differ", QkLayoutError);
  s.wk = c_array(wk, {4, 6});
  s.heads = 3;
  CHECK_THROWS_WITH_AS(QkArrays{s}, "\"Wq\"'s 8 query outputs do not split into 3 heads (--heads)", QkLayoutError);
  s.heads = 2;
  s.wq.strides = {-6, 1};
  CHECK_THROWS_WITH_AS(QkArrays{s}, doctest::Contains("negative stride"), QkLayoutError);
  s.wq = c_array(wq, {8, 6});
  wq[5 * 6 + 2] = std::numeric_limits<float>::quiet_NaN();
  QkArrays bad(s);
  bad.load_layer(0, false);
  HeadWeights<float> w;
  bad.head(0, w);  // rows 0 .. 3
  CHECK_THROWS_WITH_AS(bad.head(1, w), "tensor \"Wq\" holds a non-finite value (nan) at element 32 (C order)", QkLayoutError);
}

TEST_CASE("qk layouts: auto finds the one named layout whose names the checkpoint has") {
  ScratchDir dir;
  const auto file = dir.path() / "m.safetensors";
  const std::vector<float> v(16, 0.5f);
  QkLayoutOptions o;
  o.layout = "auto";
  o.heads = 2;
  for (const auto& [name, layout] : {std::pair{"transformer.h.0.attn.c_attn.weight", "gpt2"}, {"model.layers.0.self_attn.q_proj.weight", "llama"},
                                     {"bert.encoder.layer.0.attention.self.query.weight", "bert"},
                                     {"roberta.encoder.layer.0.attention.self.query.weight", "roberta"}}) {
    INFO(layout);
    const std::string n = name;
    const std::string key = n.substr(0, n.find("q_proj")) + "k_proj.weight";
    std::vector<SafetensorsOutput> t = {tensor(n, {4, 4}, v)};
    if (std::string(layout) == "llama") t.push_back(tensor(key, {4, 4}, v));
    if (std::string(layout) == "bert" || std::string(layout) == "roberta")
      t.push_back(tensor(n.substr(0, n.find("query")) + "key.weight", {4, 4}, v));
    if (std::string(layout) == "gpt2") t = {tensor(n, {4, 12}, std::vector<float>(48, 0.5f))};
    write_safetensors(file, t);
    CHECK(detect_qk_layout(SafetensorsCheckpoint::open(file)) == layout);
    CHECK(plan_qk_layout(SafetensorsCheckpoint::open(file), o).layout == layout);
  }
  write_safetensors(file, {tensor("w", {4, 4}, v)});
  CHECK_THROWS_WITH_AS(detect_qk_layout(SafetensorsCheckpoint::open(file)), doctest::Contains("layout auto: no layer-0 query weight"), QkLayoutError);
  write_safetensors(file, {tensor("h.0.attn.c_attn.weight", {4, 12}, std::vector<float>(48, 0.5f)), tensor("layers.0.self_attn.q_proj.weight", {4, 4}, v)});
  CHECK_THROWS_WITH_AS(detect_qk_layout(SafetensorsCheckpoint::open(file)), doctest::Contains("the names fit 2 layouts (gpt2, llama)"), QkLayoutError);
}
