// W_Q and W_K in memory, read head by head as a QkCheckpoint (qk_arrays.hpp).
#include "attnlab/model/qk_arrays.hpp"

#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <set>
#include <type_traits>
#include <utility>
#include <stdexcept>

#include "attnlab/io/safetensors.hpp"

namespace attnlab {

namespace {

const char* dtype_name(QkArrayDtype t) {
  switch (t) {
    case QkArrayDtype::f16: return "F16";
    case QkArrayDtype::f32: return "F32";
    case QkArrayDtype::f64: return "F64";
  }
  return "";
}

std::string quoted(const std::string& name) { return "\"" + name + "\""; }

std::string shape_text(const std::vector<std::int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

// Rows [first, first + count) of the (outputs, inputs) weight whose element (o, i) lies at base + o s_out + i s_in,
// as the columns of a column-major (inputs x count) matrix: head h's W_h (d x d_k) when first = h d_k. A head's
// block of nn.Linear's C-order weight is read row by row, contiguously.
template <typename S, typename T>
void copy_block(const S* base, std::int64_t s_out, std::int64_t s_in, Eigen::Index first, Eigen::Index count,
                Eigen::Index inputs, Mat<T>& m) {
  m.resize(inputs, count);
  for (Eigen::Index r = 0; r < count; ++r) {
    const S* row = base + (first + r) * s_out;
    T* col = m.col(r).data();
    for (Eigen::Index i = 0; i < inputs; ++i) col[i] = static_cast<T>(row[i * s_in]);
  }
}

template <typename F>
void with_source(const QkArray& a, F&& f) {
  switch (a.dtype) {
    case QkArrayDtype::f16: f(static_cast<const Eigen::half*>(a.data)); return;
    case QkArrayDtype::f32: f(static_cast<const float*>(a.data)); return;
    case QkArrayDtype::f64: f(static_cast<const double*>(a.data)); return;
  }
}

// The first non-finite value of layer `layer` of `a` (all of it when not stacked) in C order: its element index
// within the layer and its value; nullopt when there is none.
std::optional<std::pair<std::int64_t, double>> first_nonfinite(const QkArray& a, bool stacked, std::int64_t layer) {
  const std::size_t axis = stacked ? 1 : 0;
  const std::int64_t base = stacked ? layer * a.strides[0] : 0;
  const std::int64_t rows = a.shape.size() > axis + 1 ? a.shape[axis] : 1, cols = a.shape.back();
  const std::int64_t s_row = a.shape.size() > axis + 1 ? a.strides[axis] : 0, s_col = a.strides.back();
  std::optional<std::pair<std::int64_t, double>> found;
  with_source(a, [&](const auto* p) {
    for (std::int64_t r = 0; r < rows && !found; ++r)
      for (std::int64_t c = 0; c < cols; ++c) {
        const double v = static_cast<double>(p[base + r * s_row + c * s_col]);
        if (!std::isfinite(v)) {
          found = {r * cols + c, v};
          break;
        }
      }
  });
  return found;
}

}  // namespace

QkArrays::QkArrays(QkArraysSpec spec) : spec_(std::move(spec)) {
  const QkArray &wq = spec_.wq, &wk = spec_.wk;
  for (const auto& [a, name] : {std::pair{&wq, "Wq"}, {&wk, "Wk"}})
    if (a->shape.size() != 2 && a->shape.size() != 3)
      throw QkLayoutError(fmt::format("{} has shape {}: a weight is 2-D, or 3-D with the layers first", quoted(name), shape_text(a->shape)));
  if (wq.shape.size() != wk.shape.size())
    throw QkLayoutError(fmt::format("\"Wk\" has shape {} but \"Wq\" has {}: both 2-D, or both 3-D with the layers first",
                                    shape_text(wk.shape), shape_text(wq.shape)));
  stacked_ = wq.shape.size() == 3;
  const std::int64_t layers = stacked_ ? wq.shape[0] : 1;
  if (stacked_ && wk.shape[0] != layers)
    throw QkLayoutError(fmt::format("\"Wk\" holds {} layers but \"Wq\" holds {}", wk.shape[0], layers));
  if (layers < 1) throw QkLayoutError("\"Wq\" holds no layer");
  for (const auto& [a, name] : {std::pair{&spec_.wq, "Wq"}, {&spec_.wk, "Wk"}, {spec_.bq ? &*spec_.bq : nullptr, "bq"},
                                {spec_.bk ? &*spec_.bk : nullptr, "bk"}}) {
    if (a == nullptr) continue;
    if (a->strides.size() != a->shape.size())
      throw std::invalid_argument(fmt::format("QkArrays: {} has {} strides for {} axes", name, a->strides.size(), a->shape.size()));
    for (const std::int64_t s : a->strides)
      if (s < 0) throw QkLayoutError(fmt::format("{} has a negative stride; copy it first", quoted(name)));
  }

  // The plan, as --layout custom would resolve it: names per layer, the storage, the widths from the shapes.
  plan_.layout = "custom";
  plan_.storage = spec_.transpose ? QkStorage::in_out : QkStorage::out_in;
  plan_.layers = layers;
  const auto layer_name = [&](const char* name, std::int64_t l) { return stacked_ ? fmt::format("{}[{}]", name, l) : std::string(name); };
  std::set<std::string> dtypes;
  for (std::int64_t l = 0; l < layers; ++l) {
    plan_.q.push_back(layer_name("Wq", l));
    plan_.k.push_back(layer_name("Wk", l));
    plan_.q_bias.push_back(spec_.bq ? layer_name("bq", l) : "");
    plan_.k_bias.push_back(spec_.bk ? layer_name("bk", l) : "");
  }
  for (const QkArray* a : {&spec_.wq, &spec_.wk, spec_.bq ? &*spec_.bq : nullptr, spec_.bk ? &*spec_.bk : nullptr})
    if (a != nullptr) {
      dtypes.insert(dtype_name(a->dtype));
      plan_.needs_double = plan_.needs_double || a->dtype == QkArrayDtype::f64;
    }
  plan_.dtypes.assign(dtypes.begin(), dtypes.end());
  // One layer's shape: a stack's without its layers axis (a bias of a stack that is not (layers, outputs) keeps its
  // whole shape, which plan_qk_widths then refuses).
  const auto slice = [&](const QkArray& a) {
    if (!stacked_ || (&a != &spec_.wq && &a != &spec_.wk && (a.shape.size() != 2 || a.shape[0] != layers))) return a.shape;
    return std::vector<std::int64_t>(a.shape.begin() + 1, a.shape.end());
  };
  const auto shape_of = [&](const std::string& name) {
    const QkArray* a = name.starts_with("Wq") ? &spec_.wq : name.starts_with("Wk") ? &spec_.wk : name.starts_with("bq") ? &*spec_.bq : &*spec_.bk;
    std::vector<std::uint64_t> out;
    for (const std::int64_t s : slice(*a)) out.push_back(static_cast<std::uint64_t>(s));
    return out;
  };
  QkLayoutOptions options;
  options.layout = "custom";
  options.heads = spec_.heads;
  options.kv_heads = spec_.kv_heads;
  options.transpose = spec_.transpose;
  plan_qk_widths(plan_, options, {shape_of, [] { return std::optional<QkConfig>(); }, {}, {}, std::nullopt});
  path_ = spec_.name;
}

void QkArrays::load_layer(Eigen::Index l, bool in_double) {
  if (l < 0 || l >= plan_.layers) throw std::logic_error("QkArrays::load_layer: no layer " + std::to_string(l));
  layer_ = l;
  in_double_ = in_double;
  // What the safetensors reader reads whole when a layer is loaded, checked in its order (the biases, then in x out
  // weights); nn.Linear's weights are checked head by head as they are read (read_head), as it reads them.
  const auto l_ = static_cast<std::size_t>(l);
  std::vector<std::pair<const QkArray*, std::string>> whole = {{spec_.bq ? &*spec_.bq : nullptr, plan_.q_bias[l_]},
                                                               {spec_.bk ? &*spec_.bk : nullptr, plan_.k_bias[l_]}};
  if (plan_.storage == QkStorage::in_out) whole.insert(whole.end(), {{&spec_.wq, plan_.q[l_]}, {&spec_.wk, plan_.k[l_]}});
  for (const auto& [a, name] : whole)
    if (a != nullptr)
      if (const auto bad = first_nonfinite(*a, stacked_, l))
        throw QkLayoutError(nonfinite_weight_problem(name, bad->second, static_cast<std::uint64_t>(bad->first)));
}

void QkArrays::head(Eigen::Index h, HeadWeights<float>& out) const { read_head(h, out); }
void QkArrays::head(Eigen::Index h, HeadWeights<double>& out) const { read_head(h, out); }

template <typename T>
void QkArrays::read_head(Eigen::Index h, HeadWeights<T>& out) const {
  if (layer_ < 0 || in_double_ != std::is_same_v<T, double>) throw std::logic_error("QkArrays::head: load_layer first, in this precision");
  if (h < 0 || h >= plan_.heads) throw std::logic_error("QkArrays::head: no head " + std::to_string(h));
  const Eigen::Index d = plan_.d, dk = plan_.d_k;
  const bool rows_out = plan_.storage == QkStorage::out_in;
  const auto l = static_cast<std::size_t>(layer_);
  // One weight's head block: (o, i) of layer l at data + l s_layer + o s_out + i s_in.
  const auto weight = [&](const QkArray& a, const std::string& name, Eigen::Index first, Mat<T>& m) {
    if (std::is_same_v<T, float> && a.dtype == QkArrayDtype::f64)
      throw QkLayoutError(fmt::format("tensor {} is F64, which float cannot hold exactly: read it in double", quoted(name)));
    const std::size_t axis = stacked_ ? 1 : 0;
    const std::int64_t s_out = a.strides[axis + (rows_out ? 0 : 1)], s_in = a.strides[axis + (rows_out ? 1 : 0)];
    const std::int64_t base = stacked_ ? layer_ * a.strides[0] : 0;
    with_source(a, [&](const auto* p) { copy_block(p + base, s_out, s_in, first, dk, d, m); });
    if (!rows_out || m.allFinite()) return;  // in x out weights were checked whole by load_layer
    // The first non-finite value of the head's rows, in C order: its element (first + r) d + i.
    for (Eigen::Index r = 0; r < dk; ++r)
      for (Eigen::Index i = 0; i < d; ++i)
        if (!std::isfinite(m(i, r)))
          throw QkLayoutError(nonfinite_weight_problem(name, static_cast<double>(m(i, r)), static_cast<std::uint64_t>((first + r) * d + i)));
  };
  const auto bias = [&](const std::optional<QkArray>& a, const std::string& name, Eigen::Index first, Vec<T>& v) {
    if (!a) {
      v = Vec<T>::Zero(dk);
      return;
    }
    if (std::is_same_v<T, float> && a->dtype == QkArrayDtype::f64)
      throw QkLayoutError(fmt::format("tensor {} is F64, which float cannot hold exactly: read it in double", quoted(name)));
    const std::int64_t base = stacked_ ? layer_ * a->strides[0] : 0, step = a->strides[stacked_ ? 1 : 0];
    v.resize(dk);
    with_source(*a, [&](const auto* p) {
      for (Eigen::Index r = 0; r < dk; ++r) v(r) = static_cast<T>(p[base + (first + r) * step]);
    });  // checked whole by load_layer
  };
  const Eigen::Index q_at = h * dk, k_at = plan_.kv_head(h) * dk;
  weight(spec_.wq, plan_.q[l], q_at, out.wq);
  weight(spec_.wk, plan_.k[l], k_at, out.wk);
  bias(spec_.bq, plan_.q_bias[l], q_at, out.bq);
  bias(spec_.bk, plan_.k_bias[l], k_at, out.bk);
}

template void QkArrays::read_head(Eigen::Index, HeadWeights<float>&) const;
template void QkArrays::read_head(Eigen::Index, HeadWeights<double>&) const;

}  // namespace attnlab
