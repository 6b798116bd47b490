// The user's own matrices as .npy files (--wq --wk [--x], --q --k --v, --x --b), checked as a set.
#pragma once

#include <Eigen/Dense>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnlab/lab/attention_inputs.hpp"
#include "attnlab/lab/qk_weights.hpp"

namespace CLI {
class App;
}  // namespace CLI

namespace attnlab {

// Which matrices an experiment can take instead of its random draws.
//   qk_weights    --wq FILE --wk FILE: W_Q, W_K d x d_k each (d_k <= d)
//   qk_weights_x  the same and an optional --x FILE: X n x d, the inputs scores are formed from
//   attention     --q FILE --k FILE --v FILE: Q, K n x d; V n x d_v
//   regression    --x FILE --b FILE: X n x d; B n x n
enum class GivenKind { qk_weights, qk_weights_x, attention, regression };

// Thrown for given inputs that cannot be used; what() is one line naming the flag, the file
// and the problem. Experiments map it (like NpyError) to exit status 2.
struct GivenInputsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The value of every table's `inputs` column for a run on our random draws.
inline constexpr const char* kRandomInputsLabel = "random";
// The `family` a table gives the one configuration of a run on given inputs.
inline constexpr const char* kGivenFamily = "given";

// The least memory a run on given inputs needs, and what for (ExperimentCli::given_memory_need).
struct GivenMemoryNeed {
  double bytes = 0;
  std::string what;  // "1 double matrix of 8192 x 8192 (Q K^T, whose rank L1 measures)"
};
// `count` double matrices of rows x cols, needed for `what`.
GivenMemoryNeed double_matrices(int count, Eigen::Index rows, Eigen::Index cols, const std::string& what);
// Both needs at once.
GivenMemoryNeed operator+(const GivenMemoryNeed& a, const GivenMemoryNeed& b);

// Registers the flags of `kind` on `app`; after the parse, load() reads and checks the files.
//   GivenInputs given(app, GivenKind::qk_weights);
//   app.parse(argc, argv);
//   given.load();  // throws GivenInputsError
//   if (given.used()) run_on(given.qk_weights());
class GivenInputs {
 public:
  GivenInputs(CLI::App& app, GivenKind kind);

  // Reads every file given and checks that they form a complete set of consistent shapes;
  // does nothing when no file was given. Values arrive finite (the reader refuses others). W_Q and W_K
  // are each multiplied by the power of two that brings their largest magnitude into [0.5, 1): exact, and
  // the claims on them are invariant to their scales (see load()).
  void load();

  bool used() const { return used_; }
  GivenKind kind() const { return kind_; }
  // "random" without files; "given: wq=a.npy x 2^-3, wk=b.npy x 2^2" (the paths as typed, and the power
  // of two each of W_Q, W_K was scaled by, where not 1) with them.
  std::string label() const;

  // A loaded matrix by its flag's name ("wq", "x", ...), in precision T; throws
  // std::logic_error for one that was not given.
  template <typename T>
  Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic> load(const std::string& name) const {
    return matrix(name).template cast<T>();
  }
  const Eigen::MatrixXd& matrix(const std::string& name) const;
  bool has(const std::string& name) const;

  // The loaded set in the library's types (qk_weights and attention kinds).
  QkWeights qk_weights() const { return {matrix("wq"), matrix("wk")}; }
  AttentionInputs attention_inputs() const { return {matrix("q"), matrix("k"), matrix("v")}; }

  // One attention configuration's inputs: the given Q, K, V for the family kGivenFamily,
  // else a draw of `family` at (n, d) (see attention_inputs.hpp).
  AttentionInputs attention_inputs_of(const std::string& family, Eigen::Index n, Eigen::Index d, Rng& rng) const;
  // The families an attention sweep runs over: {kGivenFamily} with given inputs, else `random`.
  std::vector<std::string> families_or(std::vector<std::string> random) const;

 private:
  struct Slot {
    std::string name, path;
    bool required;  // part of the set, as opposed to an optional extra such as --x of qk_weights
    Eigen::MatrixXd value;
    int exponent;   // value = the file's matrix x 2^exponent (W_Q and W_K, brought to unit scale by load())
  };
  void check_shapes() const;
  const Slot& slot(const std::string& name) const;

  GivenKind kind_;
  std::vector<Slot> slots_;
  bool used_ = false;
};

}  // namespace attnlab
