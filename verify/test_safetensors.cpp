// The safetensors reader and writer (io/safetensors*.hpp), the layouts (model/qk_layout.hpp) and the factored
// per-head measurements (qk/factored_spectrum.hpp) against the dense d x d computation.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "attnlab/core/rng.hpp"
#include "attnlab/io/atomic_file.hpp"
#include "attnlab/io/safetensors_checkpoint.hpp"
#include "attnlab/linalg/numerical_rank.hpp"
#include "attnlab/linalg/residual_ratio.hpp"
#include "attnlab/model/qk_layout.hpp"
#include "attnlab/qk/factored_spectrum.hpp"
#include "attnlab/qk/qk_split.hpp"
#include "attnlab/qk/sym_eigen.hpp"
#include "support.hpp"

using namespace attnlab;
using attnlab::testing::ScratchDir;

namespace {

SafetensorsOutput tensor(const std::string& name, SafetensorsDtype dtype, std::vector<std::uint64_t> shape, std::vector<float> values) {
  return {name, dtype, std::move(shape), [values, dtype] { return encode_safetensors_values(std::span<const float>(values), dtype); }};
}


// The one-line error of opening `bytes` as a file named "t.safetensors".
std::string refusal(const std::string& bytes) {
  try {
    SafetensorsFile f(std::span<const unsigned char>(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()), "t.safetensors");
  } catch (const SafetensorsError& e) {
    return e.what();
  }
  return "";
}

std::string with_header(const std::string& json, const std::string& data) {
  std::uint64_t n = json.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + json + data;
}

}  // namespace

TEST_CASE("safetensors: every float dtype written and read back exactly; rows read in part") {
  ScratchDir dir;
  // Values exact in every dtype: small integers and halves.
  const std::vector<float> v = {0.5f, -1.0f, 2.0f, 0.25f, 1.5f, -0.75f, 3.0f, -4.0f, 0.0f, 8.0f, -0.125f, 1.0f};
  const auto path = dir.path() / "m.safetensors";
  write_safetensors(path, {tensor("b", SafetensorsDtype::BF16, {3, 4}, v), tensor("h", SafetensorsDtype::F16, {2, 2, 3}, v),
                           tensor("f", SafetensorsDtype::F32, {12}, v), tensor("d", SafetensorsDtype::F64, {4, 3}, v)},
                    {{"format", "pt"}});
  CHECK(std::filesystem::file_size(path) % 8 == 0);  // header padded to 8: the data start aligned
  const SafetensorsFile f(path);
  CHECK(f.header().metadata.at("format") == "pt");
  REQUIRE(f.header().tensors.size() == 4);
  for (const char* name : {"b", "h", "f", "d"}) {
    const SafetensorsTensor& t = f.tensor(name);
    INFO(name);
    std::vector<double> all(t.elements());
    f.read_rows(t, 0, t.rows(), all.data());
    for (std::size_t i = 0; i < v.size(); ++i) CHECK(all[i] == double(v[i]));
    if (t.dtype != SafetensorsDtype::F64) {  // float holds these dtypes exactly; rows in the middle alone
      std::vector<float> part(t.row_elements());
      f.read_rows(t, 1, 1, part.data());
      for (std::size_t i = 0; i < part.size(); ++i) CHECK(part[i] == v[t.row_elements() + i]);
    }
  }
  // F64 never narrows silently; rows outside the tensor are refused.
  std::vector<float> one(3);
  CHECK_THROWS_WITH_AS(f.read_rows(f.tensor("d"), 0, 1, one.data()), doctest::Contains("is F64, which float cannot hold exactly"), SafetensorsError);
  CHECK_THROWS_WITH_AS(f.read_rows(f.tensor("b"), 2, 2, one.data()), doctest::Contains("rows [2, 4) asked for, it has 3"), SafetensorsError);
}

TEST_CASE("safetensors: F16 and BF16 round to nearest, ties to even, and widen exactly") {
  // 1 + 2^-8 lies halfway between bfloat16's 1 and 1 + 2^-7: the tie goes to the even 1; 1 + 3 2^-8 to 1 + 2^-6.
  const std::vector<float> x = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-11f, 65504.0f, 0x1p-24f};
  const std::string bf = encode_safetensors_values(std::span<const float>(x.data(), 2), SafetensorsDtype::BF16);
  CHECK(static_cast<unsigned char>(bf[0]) == 0x80);  // 0x3f80: 1.0
  CHECK(static_cast<unsigned char>(bf[2]) == 0x82);  // 0x3f82: 1 + 2^-6
  const std::string h = encode_safetensors_values(std::span<const float>(x.data() + 2, 3), SafetensorsDtype::F16);
  ScratchDir dir;
  write_safetensors(dir.path() / "h.safetensors", {{"h", SafetensorsDtype::F16, {3}, [&] { return h; }}});
  const SafetensorsFile f(dir.path() / "h.safetensors");
  std::vector<float> back(3);
  f.read_rows(f.tensor("h"), 0, 3, back.data());
  CHECK(back[0] == 1.0f);  // 1 + 2^-11: half way between F16's 1 and 1 + 2^-10, to even
  CHECK(back[1] == 65504.0f);
  CHECK(back[2] == 0x1p-24f);  // the smallest subnormal, exactly
  const std::vector<float> big = {70000.0f};
  CHECK_THROWS_WITH_AS(encode_safetensors_values(std::span<const float>(big), SafetensorsDtype::F16), doctest::Contains("beyond F16's range"),
                       std::invalid_argument);
}

TEST_CASE("safetensors: a hostile header is refused in one line naming the file, before any data is used") {
  const std::string w(24, '\0');
  const std::string good = R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})";
  CHECK(refusal(with_header(good, w)).empty());
  for (const auto& [json, data, fragment] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})", w, "duplicate key \"w\""},
           {R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,24]}})", w, "needs 16 bytes"},
           {R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,24]}})", w, "more than 2^64"},
           {R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})", w + "x", "after the last tensor"},
           {R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},"b":{"dtype":"U8","shape":[8],"data_offsets":[16,24]}})", w, "overlap"},
           {R"({"w":{"dtype":"Q4","shape":[2,3],"data_offsets":[0,24]}})", w, "unknown dtype \"Q4\""},
           {R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24],"extra":0}})", w, "unknown key \"extra\""},
           {R"([1])", "", "not a JSON object"}}) {
    INFO(json);
    const std::string message = refusal(with_header(json, data));
    CHECK(message.rfind("t.safetensors: ", 0) == 0);
    CHECK(message.find(fragment) != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
  std::string huge(8, '\0');
  const std::uint64_t n = kSafetensorsMaxHeaderBytes + 1;
  std::memcpy(huge.data(), &n, 8);
  CHECK(refusal(huge + "{}").find("above the bound") != std::string::npos);
  CHECK(refusal("\x05\0\0").find("shorter than the 8-byte") != std::string::npos);
}

TEST_CASE("safetensors: a non-finite weight and an integer weight are refused naming the tensor") {
  ScratchDir dir;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::string bytes(16, '\0');
  const float values[4] = {1.0f, 2.0f, nan, 4.0f};
  std::memcpy(bytes.data(), values, 16);
  write_safetensors(dir.path() / "n.safetensors", {{"w", SafetensorsDtype::F32, {2, 2}, [&] { return bytes; }},
                                                   {"i", SafetensorsDtype::I32, {4}, [&] { return bytes; }}});
  const SafetensorsFile f(dir.path() / "n.safetensors");
  std::vector<double> out(4);
  CHECK_THROWS_WITH_AS(f.read_rows(f.tensor("w"), 0, 2, out.data()), doctest::Contains("\"w\" holds a non-finite value (nan) at element 2"),
                       SafetensorsError);
  CHECK_NOTHROW(f.read_rows(f.tensor("w"), 0, 1, out.data()));  // the first row is finite
  CHECK_THROWS_WITH_AS(f.read_rows(f.tensor("i"), 0, 4, out.data()), doctest::Contains("\"i\" has dtype I32"), SafetensorsError);
}

TEST_CASE("safetensors checkpoint: an index maps names to shards in its directory, and nowhere else") {
  ScratchDir dir;
  const std::vector<float> v = {1, 2, 3, 4};
  write_safetensors(dir.path() / "a.safetensors", {tensor("x", SafetensorsDtype::F32, {4}, v)});
  write_safetensors(dir.path() / "b.safetensors", {tensor("y", SafetensorsDtype::BF16, {2, 2}, v)});
  const auto index = [&](const std::string& map) {
    write_file_atomically(dir.path() / kSafetensorsIndexName, R"({"metadata": {"total_size": 24}, "weight_map": {)" + map + "}}");
  };
  index(R"("x": "a.safetensors", "y": "b.safetensors")");
  const SafetensorsCheckpoint c = SafetensorsCheckpoint::open(dir.path());  // the directory stands for its index
  CHECK(c.shards() == 2);
  CHECK(c.names() == std::vector<std::string>{"x", "y"});
  CHECK(c.locate("y").second.dtype == SafetensorsDtype::BF16);
  index(R"("x": "a.safetensors", "z": "b.safetensors")");
  CHECK_THROWS_WITH_AS(SafetensorsCheckpoint::open(dir.path()), doctest::Contains("names tensor \"z\" in b.safetensors, which does not hold it"),
                       SafetensorsError);
  index(R"("x": "../a.safetensors")");
  CHECK_THROWS_WITH_AS(SafetensorsCheckpoint::open(dir.path()), doctest::Contains("not a file name in the index's directory"), SafetensorsError);
  index(R"("x": "a.safetensors", "x": "b.safetensors")");
  CHECK_THROWS_WITH_AS(SafetensorsCheckpoint::open(dir.path()), doctest::Contains("duplicate key \"x\""), SafetensorsError);
}

namespace {

// A model's attention weights under `names` (every tensor 4 x 4 F32 unless the shape is given).
void write_model(const std::filesystem::path& file, const std::vector<std::pair<std::string, std::vector<std::uint64_t>>>& names) {
  std::vector<SafetensorsOutput> out;
  for (const auto& [name, shape] : names) {
    std::uint64_t n = 1;
    for (auto s : shape) n *= s;
    out.push_back(tensor(name, SafetensorsDtype::F32, shape, std::vector<float>(n, 0.5f)));
  }
  write_safetensors(file, out);
}

}  // namespace

TEST_CASE("qk layouts: the prefix is found, layers counted, heads from config.json or the flag, mismatches named") {
  ScratchDir dir;
  const auto file = dir.path() / "model.safetensors";
  const std::string b = "bert.encoder.layer.";
  write_model(file, {{b + "0.attention.self.query.weight", {8, 8}}, {b + "0.attention.self.key.weight", {8, 8}},
                     {b + "0.attention.self.query.bias", {8}}, {b + "1.attention.self.query.weight", {8, 8}},
                     {b + "1.attention.self.key.weight", {8, 8}}, {b + "1.attention.self.query.bias", {8}}});
  QkLayoutOptions o;
  o.layout = "bert";
  CHECK_THROWS_WITH_AS(plan_qk_layout(SafetensorsCheckpoint::open(file), o), doctest::Contains("no config.json beside it"), QkLayoutError);
  write_file_atomically(dir.path() / "config.json", R"({"hidden_size": 8, "num_attention_heads": 2, "model_type": "bert"})");
  const QkLayoutPlan p = plan_qk_layout(SafetensorsCheckpoint::open(file), o);
  CHECK(p.prefix == "bert.");
  CHECK(p.layers == 2);
  CHECK(p.heads == 2);
  CHECK(p.d_k == 4);
  CHECK(p.heads_from == "config.json");
  CHECK(p.has_q_bias());
  CHECK_FALSE(p.has_k_bias());  // only the query has one here: the key's bias row is zero
  o.heads = 4;  // the flag against the file
  CHECK_THROWS_WITH_AS(plan_qk_layout(SafetensorsCheckpoint::open(file), o), doctest::Contains("--heads 4 but"), QkLayoutError);
  o.heads = 0;
  o.layout = "llama";
  CHECK_THROWS_WITH_AS(plan_qk_layout(SafetensorsCheckpoint::open(file), o),
                       doctest::Contains("no tensor named \"layers.0.self_attn.q_proj.weight\""), QkLayoutError);
  // A missing layer between present ones, and a model under two prefixes.
  write_model(file, {{"encoder.layer.0.attention.self.query.weight", {8, 8}}, {"encoder.layer.0.attention.self.key.weight", {8, 8}},
                     {"encoder.layer.2.attention.self.query.weight", {8, 8}}, {"encoder.layer.2.attention.self.key.weight", {8, 8}}});
  o.layout = "bert";
  CHECK_THROWS_WITH_AS(plan_qk_layout(SafetensorsCheckpoint::open(file), o), doctest::Contains("for layer 1, though layer 2 has one"), QkLayoutError);
  write_model(file, {{"a.encoder.layer.0.attention.self.query.weight", {8, 8}}, {"b.encoder.layer.0.attention.self.query.weight", {8, 8}}});
  CHECK_THROWS_WITH_AS(plan_qk_layout(SafetensorsCheckpoint::open(file), o), doctest::Contains("choose one with --prefix"), QkLayoutError);
}

TEST_CASE("factored_spectrum: the QR path's numbers equal the dense d x d computation's, edge sizes included") {
  const std::uint64_t seed = attnlab::testing::test_seed(37);
  INFO("seed " << seed);
  Rng rng(seed);
  struct Shape {
    Eigen::Index d, dk;
  };
  for (const Shape s : {Shape{1, 1}, {2, 1}, {3, 1}, {3, 2}, {3, 3}, {8, 2}, {16, 4}, {16, 16}, {40, 6}}) {
    for (const char* kind : {"random", "tied", "zero", "rank-deficient"}) {
      INFO("d " << s.d << ", d_k " << s.dk << ", " << kind);
      Mat<double> wq = gaussian_matrix<double>(s.d, s.dk, rng), wk = gaussian_matrix<double>(s.d, s.dk, rng);
      if (std::string(kind) == "tied") wk = wq;
      if (std::string(kind) == "zero") wq.setZero();
      if (std::string(kind) == "rank-deficient") wq.col(0).setZero();
      const FactoredSpectrum f = factored_spectrum(wq, wk);
      // The dense oracle: M, S_w formed (d x d), Eigen's SVD and symmetric eigensolver.
      const Mat<double> m = wq * wk.transpose(), sw = symmetric_part(m);
      const Vec<double> lambda = Eigen::SelfAdjointEigenSolver<Mat<double>>(sw, Eigen::EigenvaluesOnly).eigenvalues();
      const EigenvalueSigns signs = count_eigenvalue_signs(lambda, s.d);
      const double unit = double(s.d) * std::numeric_limits<double>::epsilon() * wq.norm() * wk.norm();
      const double scale = unit > 0 ? unit : 1;
      ATTNLAB_CHECK_RATIO_LE(std::abs(f.m_norm - m.norm()) / scale, kResidualRatioThreshold, "||M||_F");
      ATTNLAB_CHECK_RATIO_LE(std::abs(f.skew_share * f.m_norm - skew_part(m).norm()) / scale, kResidualRatioThreshold, "||R_w||_F");
      ATTNLAB_CHECK_RATIO_LE(std::abs(f.s_norm - sw.norm()) / scale, kResidualRatioThreshold, "||S_w||_F");
      // Counts agree wherever no value lies within 10x of its tolerance (there rounding decides, in either path).
      const Vec<double> sigma = Eigen::BDCSVD<Mat<double>>(m).singularValues();
      const double rank_tol = rank_tolerance<double>(sigma, s.d, s.d), eig_tol = double(s.d) * std::numeric_limits<double>::epsilon() * lambda.cwiseAbs().maxCoeff();
      const auto clear = [](const Vec<double>& v, double tol) { return ((v.cwiseAbs().array() < tol / 10) || (v.cwiseAbs().array() > tol * 10)).all(); };
      if (clear(sigma, rank_tol)) CHECK(f.rank_m == numerical_rank(m));
      if (clear(lambda, eig_tol)) {
        CHECK(f.nonzero_s == signs.nonzero);
        CHECK(f.positive_s == signs.positive);
        CHECK(f.negative_s == signs.negative);
      }
      CHECK(f.rank_m <= s.dk);           // R2 holds for every W_Q, W_K
      CHECK(f.nonzero_s <= 2 * s.dk);    // S_w's rank is at most 2 d_k
      std::vector<double> sq;
      for (Eigen::Index i = 0; i < lambda.size(); ++i) sq.push_back(lambda(i) * lambda(i));
      std::sort(sq.begin(), sq.end(), std::greater<>());
      double kept = 0, total = 0;
      for (std::size_t i = 0; i < sq.size(); ++i) total += sq[i], kept += i < std::size_t(s.dk) ? sq[i] : 0;
      const double next = sq.size() > std::size_t(s.dk) ? std::sqrt(sq[std::size_t(s.dk)]) : 0;
      ATTNLAB_CHECK_RATIO_LE(std::abs(f.lambda_next - next) / scale, kResidualRatioThreshold, "|lambda_{d_k+1}|");
      if (total > 0) ATTNLAB_CHECK_RATIO_LE(std::abs(f.kept_share - kept / total) * sw.norm() / scale, kResidualRatioThreshold, "kept share");
      else CHECK(f.kept_share == 1);
      if (std::string(kind) == "zero") CHECK((f.m_norm == 0 && f.skew_share == 0 && f.rank_m == 0 && f.r6_ratio == 0));
      if (std::string(kind) == "tied") CHECK(f.skew_share * f.m_norm <= 30 * unit);
    }
  }
}
