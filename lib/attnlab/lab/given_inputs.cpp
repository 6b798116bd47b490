// The user's own matrices as .npy files (--wq --wk [--x], --q --k --v, --x --b), checked as a set.
#include "attnlab/lab/given_inputs.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "attnlab/io/npy.hpp"
#include "attnlab/linalg/power_of_two_scaling.hpp"

namespace attnlab {

namespace {

std::string shape_of(const Eigen::MatrixXd& m) { return fmt::format("{} x {}", m.rows(), m.cols()); }

}  // namespace

GivenMemoryNeed double_matrices(int count, Eigen::Index rows, Eigen::Index cols, const std::string& what) {
  return {static_cast<double>(count) * static_cast<double>(rows) * static_cast<double>(cols) * sizeof(double),
          fmt::format("{} double matri{} of {} x {} ({})", count, count == 1 ? "x" : "ces", rows, cols, what)};
}

GivenMemoryNeed operator+(const GivenMemoryNeed& a, const GivenMemoryNeed& b) {
  return {a.bytes + b.bytes, a.what + " and " + b.what};
}

GivenInputs::GivenInputs(CLI::App& app, GivenKind kind) : kind_(kind) {
  struct Flag {
    const char* name;
    bool required;
    const char* help;
  };
  std::vector<Flag> flags;
  switch (kind) {
    case GivenKind::qk_weights:
    case GivenKind::qk_weights_x:
      flags = {{"wq", true, "W_Q (d x d_k) as .npy, with --wk: analyse these weights instead of random ones"},
               {"wk", true, "W_K (d x d_k) as .npy, with --wq"}};
      if (kind == GivenKind::qk_weights_x)
        flags.push_back({"x", false, "optional X (n x d) as .npy, the inputs the scores are formed from (with --wq --wk)"});
      break;
    case GivenKind::attention:
      flags = {{"q", true, "Q (n x d) as .npy, with --k --v: approximate attention on these instead of random inputs"},
               {"k", true, "K (n x d) as .npy, with --q --v"},
               {"v", true, "V (n x d_v) as .npy, with --q --k"}};
      break;
    case GivenKind::regression:
      flags = {{"x", true, "X (n x d) as .npy, with --b: solve this regression instead of random ones"},
               {"b", true, "B (n x n) as .npy, with --x"}};
      break;
  }
  slots_.reserve(flags.size());  // the options below keep pointers into the slots
  for (const auto& f : flags) {
    slots_.push_back({f.name, "", f.required, {}, 0});
    app.add_option("--" + std::string(f.name), slots_.back().path, f.help)->type_name("FILE")->group("Given inputs");
  }
}

void GivenInputs::load() {
  std::string given, missing, required;
  for (const auto& s : slots_) {
    if (s.required) required += (required.empty() ? "--" : " --") + s.name;
    if (!s.path.empty()) given += (given.empty() ? "--" : " --") + s.name;
    else if (s.required) missing += (missing.empty() ? "--" : " --") + s.name;
  }
  if (given.empty()) return;
  if (!missing.empty())
    throw GivenInputsError(fmt::format("{} given without {}: {} go together", given, missing, required));
  for (auto& s : slots_) {
    if (s.path.empty()) continue;
    try {
      s.value = read_npy_matrix<double>(s.path);
    } catch (const NpyError& e) {
      throw GivenInputsError(fmt::format("--{}: {}", s.name, e.what()));
    }
    if (s.value.size() == 0)
      throw GivenInputsError(fmt::format("--{}: {}: empty matrix ({})", s.name, s.path, shape_of(s.value)));
  }
  used_ = true;
  check_shapes();
  // W_Q and W_K at unit scale: every claim measured on them (ranks, eigenvalue counts, shares, residual ratios,
  // identities) is invariant to their scales, and a power of two moves no bit (power_of_two_scaling.hpp), so
  // weights stored at 1e-25 or 1e30 give the verdicts they give at unit scale rather than products that
  // underflow to 0 or overflow in float. The label says by how much each was scaled.
  if (kind_ == GivenKind::qk_weights || kind_ == GivenKind::qk_weights_x)
    for (auto& s : slots_)
      if (s.name == "wq" || s.name == "wk") {
        s.exponent = -max_abs_exponent(s.value);
        s.value = scaled_by_power_of_two(s.value, s.exponent);
      }
}

void GivenInputs::check_shapes() const {
  // Names the second file of a pair whose shapes disagree, with both shapes.
  auto fail = [&](const std::string& a, const std::string& b, const std::string& rule) {
    throw GivenInputsError(fmt::format("--{}: {}: shape {} does not fit --{} {} ({}): {}", b, slot(b).path,
                                       shape_of(matrix(b)), a, slot(a).path, shape_of(matrix(a)), rule));
  };
  switch (kind_) {
    case GivenKind::qk_weights:
    case GivenKind::qk_weights_x:
      if (matrix("wk").rows() != matrix("wq").rows() || matrix("wk").cols() != matrix("wq").cols())
        fail("wq", "wk", "W_Q and W_K must both be d x d_k");
      if (matrix("wq").cols() > matrix("wq").rows())
        throw GivenInputsError(fmt::format("--wq: {}: shape {} has d_k > d; W_Q must be d x d_k with d_k <= d",
                                           slot("wq").path, shape_of(matrix("wq"))));
      if (has("x") && matrix("x").cols() != matrix("wq").rows()) fail("wq", "x", "X must be n x d for W_Q d x d_k");
      break;
    case GivenKind::attention:
      if (matrix("k").cols() != matrix("q").cols() || matrix("k").rows() != matrix("q").rows())
        fail("q", "k", "Q and K must both be n x d");
      if (matrix("v").rows() != matrix("k").rows()) fail("k", "v", "V must have K's n rows");
      break;
    case GivenKind::regression:
      if (matrix("b").rows() != matrix("x").rows() || matrix("b").cols() != matrix("x").rows())
        fail("x", "b", "B must be n x n for X n x d");
      if (matrix("x").isZero(0))
        throw GivenInputsError(fmt::format("--x: {}: X is zero, so every Z fits equally", slot("x").path));
      break;
  }
}

std::string GivenInputs::label() const {
  if (!used_) return kRandomInputsLabel;
  std::string out = "given: ";
  bool first = true;
  for (const auto& s : slots_) {
    if (s.path.empty()) continue;
    out += (first ? "" : ", ") + s.name + "=" + s.path + (s.exponent != 0 ? fmt::format(" x 2^{}", s.exponent) : "");
    first = false;
  }
  return out;
}

AttentionInputs GivenInputs::attention_inputs_of(const std::string& family, Eigen::Index n, Eigen::Index d,
                                                 Rng& rng) const {
  if (family == kGivenFamily) return attention_inputs();
  return make_attention_inputs(family, n, d, rng);
}

std::vector<std::string> GivenInputs::families_or(std::vector<std::string> random) const {
  if (used_) return {kGivenFamily};
  return random;
}

const GivenInputs::Slot& GivenInputs::slot(const std::string& name) const {
  for (const auto& s : slots_)
    if (s.name == name) return s;
  throw std::logic_error("GivenInputs: no input named '" + name + "'");
}

bool GivenInputs::has(const std::string& name) const {
  for (const auto& s : slots_)
    if (s.name == name) return used_ && !s.path.empty();
  return false;
}

const Eigen::MatrixXd& GivenInputs::matrix(const std::string& name) const {
  if (!has(name)) throw std::logic_error("GivenInputs: input '" + name + "' was not given");
  return slot(name).value;
}

}  // namespace attnlab
