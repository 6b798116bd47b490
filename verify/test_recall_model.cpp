// The recall task and model (recall_spec.md): the sequences' properties, the new layers' backward passes and one
// whole model step against central differences, the chunked data-parallel step, bit-identical training for 1 and
// 2 threads, the fresh training stream, checkpoints, and the test set's files.
#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "attnlab/core/rng.hpp"
#include "attnlab/io/npy.hpp"
#include "attnlab/io/safetensors.hpp"
#include "attnlab/model/checkpoint.hpp"
#include "attnlab/model/checkpoint_export.hpp"
#include "attnlab/model/fit.hpp"
#include "attnlab/model/identity_mixer.hpp"
#include "attnlab/model/qk_checkpoint.hpp"
#include "attnlab/model/query_head.hpp"
#include "attnlab/model/recall_model.hpp"
#include "attnlab/model/recall_protocol.hpp"
#include "attnlab/model/recall_task.hpp"
#include "attnlab/model/token_embedding.hpp"
#include "attnlab/model/trainer.hpp"
#include "model_test_support.hpp"
#include "support.hpp"

using namespace attnlab;
using namespace attnlab::testing;

namespace {

using M = Mat<double>;
using V = Vec<double>;

// A small recall model: N 3 pairs (6 tokens), 7 keys, 5 values, D 8, 2 heads, 2 blocks, MLP 12.
RecallConfig tiny_recall(std::uint64_t seed, const std::string& method = "test-temperature-softmax") {
  RecallConfig c;
  c.task = {3, 7, 5};
  c.D = 8;
  c.heads = 2;
  c.layers = 2;
  c.mlp = 12;
  c.seed = seed;
  c.attention.method = method;
  return c;
}

template <typename T>
AttentionFactory<T> test_factory() {
  return [](const TrainableAttentionConfig&) { return std::make_unique<TemperatureSoftmaxAttention<T>>(); };
}

template <typename T>
std::vector<T> flat_weights(RecallModel<T>& m) {
  std::vector<T> out;
  for (const auto& t : m.parameter_tensors()) out.insert(out.end(), t.data, t.data + t.size());
  return out;
}

std::vector<std::int64_t> first_items(std::int64_t count) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) v[static_cast<std::size_t>(i)] = i;
  return v;
}

}  // namespace

TEST_CASE("recall_sequence: distinct keys, each pair's context and query, labels at queries only (random and edge sizes)") {
  Rng rng(kModelTestSeed + 30);
  INFO("seed " << kModelTestSeed + 30);
  for (Eigen::Index N : test_sizes(rng, {4, 40}, 2))
    for (Eigen::Index extra : {Eigen::Index(0), Eigen::Index(1), Eigen::Index(1000)})
      for (Eigen::Index values : {Eigen::Index(1), Eigen::Index(2), Eigen::Index(256)}) {
        const RecallTask task{N, N + extra, values};
        INFO("N " << N << " keys " << task.keys << " values " << values);
        const std::uint64_t seed = rng.next_u64();
        const RecallSequence s = recall_sequence(task, seed);
        REQUIRE(s.key.size() == static_cast<std::size_t>(2 * N));
        std::map<std::int32_t, int> seen;          // key -> tokens carrying it
        std::map<std::int32_t, std::int32_t> val;  // key -> its context value
        int queries = 0;
        for (std::size_t t = 0; t < s.key.size(); ++t) {
          CHECK(s.key[t] >= 0);
          CHECK(s.key[t] < task.keys);
          ++seen[s.key[t]];
          // A token is a context token (a value, no label) or a query (a label, no value).
          CHECK(((s.value[t] >= 0) != (s.label[t] >= 0)));
          if (s.value[t] >= 0) {
            CHECK(s.value[t] < values);
            val[s.key[t]] = s.value[t];
          } else {
            ++queries;
          }
        }
        CHECK(queries == N);
        CHECK(seen.size() == static_cast<std::size_t>(N));  // N distinct keys
        for (const auto& [k, count] : seen) CHECK(count == 2);  // each in one context token and one query
        for (std::size_t t = 0; t < s.key.size(); ++t)
          if (s.label[t] >= 0) CHECK(s.label[t] == val.at(s.key[t]));  // the answer is the key's value
        // The same seed, the same sequence; the next seed, another.
        const RecallSequence again = recall_sequence(task, seed);
        CHECK(again.key == s.key);
        CHECK(again.value == s.value);
        CHECK(again.label == s.label);
      }
  CHECK_THROWS_WITH_AS(recall_sequence({5, 4, 10}, 1), doctest::Contains("keys (= 4)"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(recall_sequence({5, 10, 257}, 1), doctest::Contains("values (= 257)"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(recall_sequence({0, 10, 10}, 1), doctest::Contains("pairs (= 0)"), std::invalid_argument);
}

TEST_CASE("recall_sequence: the positions are shuffled (every position holds a query about equally often)") {
  // 4000 sequences of N = 4: each of the 8 positions is a query with probability 1/2. A binomial(4000, 1/2) lies
  // within 4.5 standard deviations (sd = 31.6) of 2000 except with probability ~1e-5 per position.
  const RecallTask task{4, 64, 16};
  std::vector<int> query_at(8, 0);
  for (std::uint64_t i = 0; i < 4000; ++i) {
    const RecallSequence s = recall_sequence(task, derive_seed(kModelTestSeed + 31, i));
    for (std::size_t t = 0; t < 8; ++t) query_at[t] += s.label[t] >= 0;
  }
  for (int q : query_at) CHECK(std::abs(q - 2000) < 4.5 * 31.7);
}

TEST_CASE("RecallSet: splits apart, labels in position order, items checked") {
  const RecallTask task{4, 32, 8};
  const RecallSet train = recall_set(task, 5, RecallSplit::train, 10), test = recall_set(task, 5, RecallSplit::test, 10),
                  validation = recall_set(task, 5, RecallSplit::validation, 10);
  CHECK(train.seed != test.seed);
  CHECK(train.seed != validation.seed);
  CHECK(test.seed != validation.seed);
  CHECK(train.sequence(3).key != test.sequence(3).key);
  std::vector<std::uint8_t> labels;
  test.append_labels(2, labels);
  const RecallSequence s = test.sequence(2);
  std::vector<std::uint8_t> want;
  for (std::int32_t l : s.label)
    if (l >= 0) want.push_back(static_cast<std::uint8_t>(l));
  CHECK(labels == want);
  CHECK_THROWS_AS(test.sequence(10), std::out_of_range);
  CHECK_THROWS_AS(test.append_labels(-1, labels), std::out_of_range);
}

TEST_CASE("token embedding backward matches central differences") {
  Rng rng(kModelTestSeed + 32);
  INFO("seed " << kModelTestSeed + 32);
  for (Eigen::Index T : model_test_sizes(rng))
    for (Eigen::Index D : model_test_sizes(rng)) {
      INFO("tokens " << T << " D " << D);
      const Eigen::Index K = 5, Vn = 3;
      std::vector<std::int32_t> key(static_cast<std::size_t>(T)), value(static_cast<std::size_t>(T));
      for (std::size_t t = 0; t < key.size(); ++t) {
        key[t] = static_cast<std::int32_t>(rng.next_u64() % K);  // keys repeat: their gradients must sum
        value[t] = static_cast<std::int32_t>(rng.next_u64() % (Vn + 1)) - 1;  // -1: a query token
      }
      M keys = gaussian_matrix(K, D, rng), values = gaussian_matrix(Vn, D, rng), query = gaussian_matrix(1, D, rng);
      const M r = gaussian_matrix(T, D, rng);
      auto loss = [&] { M x; token_embedding_forward(key, value, keys, values, query, x); return dot_loss(r, x); };
      M dkeys = M::Zero(K, D), dvalues = M::Zero(Vn, D), dquery = M::Zero(1, D);
      token_embedding_backward(key, value, r, dkeys, dvalues, dquery);
      ATTNLAB_CHECK_RATIO_LT(fd_ratio(keys, dkeys, loss), kFdTolerance, "dL/dkeys");
      ATTNLAB_CHECK_RATIO_LT(fd_ratio(values, dvalues, loss), kFdTolerance, "dL/dvalues");
      ATTNLAB_CHECK_RATIO_LT(fd_ratio(query, dquery, loss), kFdTolerance, "dL/dquery");
    }
  const M keys = M::Zero(2, 3), values = M::Zero(2, 3), query = M::Zero(1, 3);
  M x;
  const std::vector<std::int32_t> bad_key = {2}, ok_value = {0}, bad_value = {2}, ok_key = {1};
  CHECK_THROWS_AS(token_embedding_forward<double>(bad_key, ok_value, keys, values, query, x), std::out_of_range);
  CHECK_THROWS_AS(token_embedding_forward<double>(ok_key, bad_value, keys, values, query, x), std::out_of_range);
}

TEST_CASE("query head backward matches central differences; context rows get no gradient") {
  Rng rng(kModelTestSeed + 33);
  INFO("seed " << kModelTestSeed + 33);
  for (Eigen::Index rows : model_test_sizes(rng))
    for (Eigen::Index D : {Eigen::Index(2), Eigen::Index(3), Eigen::Index(7)})
      for (Eigen::Index Vn : {Eigen::Index(1), Eigen::Index(4)}) {
        INFO("rows " << rows << " D " << D << " V " << Vn);
        const Eigen::Index n = rows + 3;
        std::vector<std::int64_t> q;
        for (Eigen::Index i = 0; i < n; ++i)
          if (q.size() < static_cast<std::size_t>(rows) && (rng.uniform() < 0.7 || n - i <= rows - static_cast<Eigen::Index>(q.size())))
            q.push_back(i);
        std::reverse(q.begin(), q.end());  // any order: the labels' order
        M x = gaussian_matrix(n, D, rng), W = gaussian_matrix(D, Vn, rng), r = gaussian_matrix(rows, Vn, rng);
        V gamma = V::Ones(D) + gaussian_matrix(D, 1, rng, 0.3), beta = gaussian_matrix(D, 1, rng), b = gaussian_matrix(Vn, 1, rng);
        auto loss = [&] { M l; QueryHeadTape<double> t; query_head_forward(x, q, gamma, beta, W, b, l, t); return dot_loss(r, l); };
        M logits, dx, dW = M::Zero(D, Vn);
        V dgamma = V::Zero(D), dbeta = V::Zero(D), db = V::Zero(Vn);
        QueryHeadTape<double> tape;
        query_head_forward(x, q, gamma, beta, W, b, logits, tape);
        query_head_backward(q, n, gamma, W, r, tape, dx, dgamma, dbeta, dW, db);
        ATTNLAB_CHECK_RATIO_LT(fd_ratio(x, dx, loss), kFdTolerance, "dL/dx");
        ATTNLAB_CHECK_RATIO_LT(fd_ratio(gamma, dgamma, loss), kFdTolerance, "dL/dgamma");
        ATTNLAB_CHECK_RATIO_LT(fd_ratio(beta, dbeta, loss), kFdTolerance, "dL/dbeta");
        ATTNLAB_CHECK_RATIO_LT(fd_ratio(W, dW, loss), kFdTolerance, "dL/dW");
        ATTNLAB_CHECK_RATIO_LT(fd_ratio(b, db, loss), kFdTolerance, "dL/db");
        for (Eigen::Index i = 0; i < n; ++i)
          if (std::find(q.begin(), q.end(), i) == q.end()) CHECK(dx.row(i).isZero(0));
      }
}

TEST_CASE("the identity mixer: out = v, dv = dout, no gradient into q and k") {
  const detail::TrainShape shape{3, 2, 4, 2};
  IdentityMixer<double> mix(shape);
  Rng rng(kModelTestSeed + 34);
  const M q = gaussian_matrix(3, 2, rng), k = gaussian_matrix(3, 2, rng), v = gaussian_matrix(3, 4, rng), d = gaussian_matrix(3, 4, rng);
  M out, dq, dk, dv;
  std::unique_ptr<AttentionTape> tape;
  mix.forward(1, q, k, v, out, &tape);
  CHECK(out == v);
  mix.backward(1, *tape, d, dq, dk, dv, nullptr);
  CHECK(dv == d);
  CHECK(dq.isZero(0));
  CHECK(dk.isZero(0));
  CHECK(dq.rows() == 3);
  CHECK(dk.cols() == 2);
  CHECK_THROWS_AS(mix.forward(2, q, k, v, out, nullptr), std::invalid_argument);
}

TEST_CASE("RecallModel: manifest order, initialisation, refusals") {
  RecallModel<double> m(tiny_recall(1), test_factory<double>());
  const auto t = m.parameter_tensors();
  REQUIRE(t.size() == 3 + 2 * 17 + 4);
  CHECK(t[0].name == "embed.keys");
  CHECK(t[0].rows == 7);
  CHECK(t[1].name == "embed.values");
  CHECK(t[1].rows == 5);
  CHECK(t[2].name == "embed.query");
  CHECK(t[2].rows == 1);
  CHECK(t[3].name == "block0.ln1.gamma");
  CHECK(t[13].name == "block0.attn.method.t");
  CHECK(t.back().name == "head.b");
  CHECK(t.back().rows == 5);
  CHECK(m.params().head_b.isZero());
  CHECK(m.params().blocks[1].ln1_gamma.isOnes());
  CHECK(m.params().query.cwiseAbs().maxCoeff() > 0);  // the marker is drawn, as every matrix
  RecallModel<double> same(tiny_recall(1), test_factory<double>()), other(tiny_recall(2), test_factory<double>());
  CHECK(flat_weights(same) == flat_weights(m));
  CHECK(flat_weights(other) != flat_weights(m));
  RecallConfig bad = tiny_recall(1);
  bad.task.keys = 2;
  CHECK_THROWS_WITH_AS(RecallModel<double>(bad, test_factory<double>()), doctest::Contains("keys (= 2)"), std::invalid_argument);
  bad = tiny_recall(1);
  bad.heads = 3;
  CHECK_THROWS_WITH_AS(RecallModel<double>(bad, test_factory<double>()), doctest::Contains("heads (= 3)"), std::invalid_argument);
  // Sequences of another task are refused, not read past a table's end.
  RecallActivations<double> act;
  const RecallSet wrong = recall_set({3, 9, 5}, 1, RecallSplit::test, 2);
  const std::vector<std::int64_t> one = {0};
  CHECK_THROWS_WITH_AS(m.set_inputs(act, wrong, one), doctest::Contains("9 keys"), std::invalid_argument);
}

TEST_CASE("RecallModel: one whole step's loss gradient matches central differences for every parameter tensor") {
  Rng rng(kModelTestSeed + 35);
  INFO("seed " << kModelTestSeed + 35);
  for (const std::string method : {"test", "exact", "linformer", "favor", kNoAttentionBaseline})
    for (std::int64_t B : {std::int64_t(1), std::int64_t(3)}) {
      INFO(method << ", sequences " << B);
      RecallConfig c = tiny_recall(kModelTestSeed + static_cast<std::uint64_t>(B), method == "test" ? "test-temperature-softmax" : method);
      c.attention.projection_k = 2;
      c.attention.features = 8;
      RecallModel<double> m = method == "test" ? RecallModel<double>(c, test_factory<double>()) : RecallModel<double>(c);
      // Larger weights than the 0.02 init, so every path (scores, LayerNorm scales, the head) is exercised.
      for (auto& t : m.parameter_tensors())
        if (!t.is_vector && t.name.find(".method.") == std::string::npos)
          Eigen::Map<Mat<double>>(t.data, t.rows, t.cols) = gaussian_matrix(t.rows, t.cols, rng, 0.5);
      const RecallSet data = recall_set(c.task, rng.next_u64(), RecallSplit::train, B);
      const std::vector<std::int64_t> items = first_items(B);
      std::vector<std::uint8_t> labels;
      for (std::int64_t i : items) data.append_labels(i, labels);
      REQUIRE(labels.size() == static_cast<std::size_t>(B * 3));
      const double scale = 1.0 / static_cast<double>(labels.size());
      RecallActivations<double> act;
      m.set_inputs(act, data, items);
      auto loss = [&] { RecallActivations<double> a; m.set_inputs(a, data, items); return m.forward_backward(a, labels, scale, nullptr); };
      RecallGrads<double> g = m.zero_grads();
      const double l0 = m.forward_backward(act, labels, scale, &g);
      CHECK(l0 == doctest::Approx(loss()).epsilon(1e-15));
      CHECK(act.logits.rows() == B * 3);
      auto params = m.parameter_tensors();
      const auto grads = m.gradient_tensors(g);
      REQUIRE(params.size() == grads.size());
      for (std::size_t i = 0; i < params.size(); ++i) {
        INFO(params[i].name);
        CHECK(params[i].name == grads[i].name);
        const auto sample = sample_entries(params[i].size(), 5, rng);
        ATTNLAB_CHECK_RATIO_LT(fd_ratio(params[i].data, grads[i].data, params[i].size(), loss, sample), kFdTolerance,
                               "dL/d" + params[i].name);
      }
    }
}

TEST_CASE("Trainer on the recall model: the chunked gradient equals the whole batch's; 1 and 2 threads bit-identical") {
  const RecallConfig c = tiny_recall(3, "exact");
  const std::int64_t B = 2 * kChunkImages + 3;  // three chunks, the last one short
  const RecallSet data = recall_set(c.task, 9, RecallSplit::train, B);
  const std::vector<std::int64_t> batch = first_items(B);
  RecallModel<double> m(c), ref(c);
  Trainer<double, RecallModel<double>> trainer(m);
  const double loss = trainer.step(data, batch, 1e-3);
  std::vector<std::uint8_t> labels;
  for (std::int64_t i : batch) data.append_labels(i, labels);
  RecallActivations<double> act;
  ref.set_inputs(act, data, batch);
  RecallGrads<double> g = ref.zero_grads();
  // The batch's loss is the mean over its queries (3 per sequence), not over its sequences.
  const double ref_loss = ref.forward_backward(act, labels, 1.0 / static_cast<double>(labels.size()), &g);
  CHECK(loss == doctest::Approx(ref_loss).epsilon(1e-13));
  const auto want = ref.gradient_tensors(g);
  const auto& got = trainer.last_gradient();
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO(want[i].name);
    const Eigen::Map<const Vec<double>> a(got[i].data, got[i].size()), b(want[i].data, want[i].size());
    CHECK((a - b).cwiseAbs().maxCoeff() <= 1e-12 * std::max(1e-3, b.cwiseAbs().maxCoeff()));
  }
  auto train = [&](int threads) {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    RecallModel<float> f(tiny_recall(5, "linformer"));
    Trainer<float, RecallModel<float>> t(f);
    const RecallSet stream = recall_set(f.config().task, 4, RecallSplit::train, 80);
    std::vector<double> losses;
    for (int s = 0; s < 2; ++s) {
      std::vector<std::int64_t> items(40);
      for (int i = 0; i < 40; ++i) items[static_cast<std::size_t>(i)] = s * 40 + i;
      losses.push_back(t.step(stream, items, 1e-3));
    }
    const Evaluation e = evaluate(f, recall_set(f.config().task, 4, RecallSplit::test, 20));
    losses.push_back(e.loss);
    losses.push_back(static_cast<double>(e.count));
    omp_set_num_threads(saved);
    return std::make_pair(flat_weights(f), losses);
  };
  const auto one = train(1), two = train(2);
  CHECK(one.first == two.first);
  CHECK(one.second == two.second);
  CHECK(one.second.back() == 20 * 3);  // evaluated over queries: 3 per sequence
}

TEST_CASE("fit on a fresh stream: every training sequence is new, epochs are evaluation intervals") {
  RecallShape shape;
  shape.task = {2, 8, 4};
  shape.D = 16;
  shape.heads = 2;
  shape.layers = 1;
  shape.mlp = 16;
  shape.batch = 8;
  shape.steps = 6;
  shape.evaluations = 3;
  RecallModel<float> m(recall_training_config("exact", 1, shape));
  // A model whose set_inputs records every item it is given.
  const RecallSet stream = recall_training_stream(shape, 1);
  CHECK(stream.count() == 6 * 8);
  const FitOptions o = recall_fit_options(shape, 4);
  CHECK(o.fresh);
  CHECK(o.epochs == 3);
  CHECK(o.train_images == 16);
  Trainer<float, RecallModel<float>> trainer(m);
  std::vector<StepRecord> steps;
  std::vector<EpochRecord> epochs;
  const RecallSet test = recall_set(shape.task, 1, RecallSplit::test, 4);
  const FitResult r = fit<float, RecallModel<float>>(trainer, stream, test, o, [&](const StepRecord& s) { steps.push_back(s); },
                                                     [&](const EpochRecord& e) { epochs.push_back(e); });
  CHECK(steps.size() == 6);
  CHECK(epochs.size() == 3);
  CHECK(r.steps == 6);
  CHECK(epochs.back().test.count == 4 * 2);
  // A stream too short for its epochs is refused.
  FitOptions longer = o;
  longer.epochs = 4;
  const auto run_longer = [&] {
    fit<float, RecallModel<float>>(trainer, stream, test, longer, [](const StepRecord&) {}, [](const EpochRecord&) {});
  };
  CHECK_THROWS_WITH_AS(run_longer(), doctest::Contains("fresh items"), std::invalid_argument);
  shape.steps = 7;
  CHECK_THROWS_AS(recall_fit_options(shape, 4), std::invalid_argument);
}

TEST_CASE("a tiny exact recall model learns to recall; the same model without attention cannot") {
  // 2 pairs over 8 keys and 4 values: exact attention must look its query's key up in the sequence. 600 steps of
  // 16 fresh sequences at lr 3e-3. Chance is 1/4; copying a value of the sequence 1/2. The threshold 0.9 for
  // exact and 0.5 for the identity (whose best is to guess the value a key's other token shows... which it cannot
  // see: 1/4 plus what the 4 values' frequencies allow) leave wide margins on 2 x 256 test queries.
  RecallShape shape;
  shape.task = {2, 8, 4};
  shape.D = 16;
  shape.heads = 2;
  shape.layers = 1;
  shape.mlp = 32;
  shape.batch = 16;
  shape.steps = 600;
  shape.lr = 3e-3;
  shape.evaluations = 1;
  const RecallSet test = recall_set(shape.task, 11, RecallSplit::test, 256);
  std::map<std::string, double> accuracy;
  for (const std::string method : {"exact", kNoAttentionBaseline}) {
    RecallModel<float> m(recall_training_config(method, 11, shape));
    Trainer<float, RecallModel<float>> trainer(m);
    const FitResult r = fit<float, RecallModel<float>>(trainer, recall_training_stream(shape, 11), test, recall_fit_options(shape, 256),
                                                       [](const StepRecord&) {}, [](const EpochRecord&) {});
    REQUIRE(!r.diverged);
    accuracy[method] = r.test.accuracy();
  }
  INFO("exact " << accuracy["exact"] << ", without attention " << accuracy[kNoAttentionBaseline]);
  CHECK(accuracy["exact"] > 0.9);
  CHECK(accuracy[kNoAttentionBaseline] < 0.5);
}

TEST_CASE("recall checkpoints: a loaded checkpoint gives bit-identical logits; a ViT checkpoint or a mismatch is one clear error") {
  ScratchDir dir;
  const RecallConfig c = tiny_recall(7, "favor");
  RecallModel<float> m(c);
  Trainer<float, RecallModel<float>> trainer(m);
  const RecallSet data = recall_set(c.task, 3, RecallSplit::train, 12);
  trainer.step(data, first_items(12), 1e-2);
  const auto ckpt = dir.path() / "ckpt";
  save_checkpoint(m, ckpt, 1);
  CHECK(read_checkpoint_format(ckpt) == kRecallCheckpointFormat);
  RecallModel<float> loaded(tiny_recall(8, "favor"));
  CHECK(predict_logits(loaded, data, first_items(12)) != predict_logits(m, data, first_items(12)));
  load_checkpoint(loaded, ckpt);
  CHECK(predict_logits(loaded, data, first_items(12)) == predict_logits(m, data, first_items(12)));
  const RecallCheckpointInfo info = read_recall_checkpoint_info(ckpt);
  CHECK(info.step == 1);
  CHECK(info.config.task == c.task);
  CHECK(info.config.D == 8);
  CHECK(info.config.attention.method == "favor");
  const NpyArray keys = read_npy(ckpt / "embed.keys.npy");
  CHECK(keys.shape == std::vector<std::size_t>{7, 8});
  CHECK(static_cast<float>(keys.values[1]) == m.params().keys(0, 1));
  RecallConfig wider = tiny_recall(7, "favor");
  wider.task.values = 6;
  RecallModel<float> other(wider);
  CHECK_THROWS_WITH_AS(load_checkpoint(other, ckpt), doctest::Contains("values = 5 does not match the model's 6"), CheckpointError);
  CHECK_THROWS_WITH_AS(read_checkpoint_info(ckpt), doctest::Contains("format is not \"attnlab-vit-checkpoint\""), CheckpointError);
  { std::ofstream(ckpt / "manifest.json") << "{\"format\": \"attnlab-recall-checkpoint\", \"version\": 1, \"method\": 3}"; }
  CHECK_THROWS_WITH_AS(load_checkpoint(loaded, ckpt), doctest::Contains("manifest.json"), CheckpointError);
}

TEST_CASE("a recall checkpoint through the inspector's door: its heads are the model's, its export names its format") {
  ScratchDir dir;
  RecallModel<float> m(tiny_recall(7, "exact"));
  const auto ckpt = dir.path() / "ckpt";
  save_checkpoint(m, ckpt, 3);
  QkLayoutOptions options;
  options.layout = "attnlab";
  const auto c = QkCheckpoint::open(ckpt, options);
  CHECK(c->plan().layers == 2);
  CHECK(c->plan().heads == 2);
  CHECK(c->plan().d == 8);
  CHECK(c->plan().d_k == 4);
  c->load_layer(1, false);
  HeadWeights<float> w;
  c->head(1, w);
  const MhaParams<float>& attn = m.params().blocks[1].attn;
  CHECK(w.wq == attn.Wq.middleCols(4, 4));
  CHECK(w.wk == attn.Wk.middleCols(4, 4));
  CHECK(w.bk == attn.bk.segment(4, 4));

  const auto file = dir.path() / "exported.safetensors";
  CHECK(export_checkpoint_safetensors(ckpt, file) == m.parameter_tensors().size() + m.buffer_tensors().size());
  const SafetensorsFile f(file);
  const auto& meta = f.header().metadata;
  CHECK(meta.at("format") == kRecallCheckpointFormat);
  CHECK(meta.at("pairs") == "3");
  CHECK(meta.at("values") == "5");
  CHECK(meta.at("H") == "2");
  CHECK(meta.at("step") == "3");
  const SafetensorsTensor& keys = f.tensor("embed.keys");
  std::vector<float> row(8);
  f.read_rows(keys, 2, 1, row.data());
  for (Eigen::Index k = 0; k < 8; ++k) CHECK(row[static_cast<std::size_t>(k)] == m.params().keys(2, k));
}

TEST_CASE("the recall test set's files: int32 arrays of the sequences, the same bytes when regenerated") {
  const RecallSet set = recall_set({4, 32, 8}, 20250311, RecallSplit::test, 5);
  const auto files = recall_set_files(set);
  REQUIRE(files.size() == 4);
  CHECK(files[0].first == "keys.npy");
  CHECK(files[3].first == "manifest.json");
  CHECK(files == recall_set_files(recall_set({4, 32, 8}, 20250311, RecallSplit::test, 5)));
  CHECK(files != recall_set_files(recall_set({4, 32, 8}, 20250312, RecallSplit::test, 5)));
  // The header numpy writes for int32 (5, 8), then sequence 0's keys as little-endian int32.
  const std::string& k = files[0].second;
  CHECK(k.find("{'descr': '<i4', 'fortran_order': False, 'shape': (5, 8), }") != std::string::npos);
  const std::size_t data = k.size() - 5 * 8 * 4;
  CHECK(data % 64 == 0);
  const RecallSequence s0 = set.sequence(0);
  for (std::size_t t = 0; t < 8; ++t) {
    std::int32_t v;
    std::memcpy(&v, k.data() + data + 4 * t, 4);
    CHECK(v == s0.key[t]);
  }
  // The committed test set, when this checkout has one: regenerated from its manifest, byte for byte.
  const std::filesystem::path committed = std::filesystem::path(ATTNLAB_SOURCE_DIR) / "results" / "recall_test";
  if (!std::filesystem::exists(committed / "manifest.json")) {
    MESSAGE("no committed results/recall_test: the regeneration of the committed test set is not checked here");
    return;
  }
  const RecallShape full;
  const RecallSet main = recall_set(full.task, 20250311, RecallSplit::test, kRecallTestSequences);
  for (const auto& [name, bytes] : recall_set_files(main)) {
    INFO(name);
    CHECK(read_text(committed / name) == bytes);
  }
}
