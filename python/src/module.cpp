// attnlab._attnlab: the library's attention methods, their gradients and the checkpoint inspector on NumPy arrays,
// built from the same library objects as build/bin/attend and attnlab_inspect and through the same pieces
// (lab/attend_call.hpp, attention/method_gradients.hpp, lab/inspect_run.hpp), so the same inputs give the same
// bits and the same refusals. The package python/attnlab/ wraps these functions with their signatures and
// documentation (docs/python.md).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <CLI/CLI.hpp>
#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <fmt/ranges.h>
#include <limits>
#include <fmt/format.h>
#include <new>
#include <omp.h>
#include <set>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "attnlab/attention/method_gradients.hpp"
#include "attnlab/io/csv_table.hpp"
#include "attnlab/io/memory_budget.hpp"
#include "attnlab/io/npy.hpp"
#include "attnlab/io/safetensors.hpp"
#include "attnlab/lab/attend_call.hpp"
#include "attnlab/lab/cli_validators.hpp"
#include "attnlab/lab/inspect_run.hpp"
#include "attnlab/model/checkpoint_manifest.hpp"
#include "attnlab/model/qk_layout.hpp"
#include "attnlab/model/qk_arrays.hpp"

namespace py = pybind11;
using namespace attnlab;
using namespace attnlab::python;

namespace {

// ------------------------------------------------------------------------------------------------ options

// attend's options without its files, parsed by CLI11 as attend parses its command line: the same validators,
// defaults and messages. One parser per thread (calls may run in several threads at once), reset at each call.
struct AttendParser {
  CLI::App app{"attnlab.attend: attend's options", "attend"};
  AttendOptions options;
  AttendParser() {
    app.set_help_flag();  // help=True is not an option of a function
    add_attend_options(app, options, AttendFlags::arrays);
  }
};

AttendParser& parser() {
  thread_local AttendParser p;
  return p;
}

// A keyword's value as the text of its flag: floats in their shortest round-trip form (Python's repr), the rest
// as str() prints them.
std::string value_text(py::handle value) {
  if (py::isinstance<py::float_>(value)) return py::repr(value);
  return py::str(value);
}

struct ParsedOptions {
  AttendOptions options;
  std::set<std::string> given;  // the flags given ("--landmarks")
};

// method and the keywords, as attend's command line --method METHOD --landmarks 64 ...: a keyword is a flag's name
// with '-' spelled '_' (pinv_init for --pinv-init); None leaves the default; a flag (share_kv, iid) takes True or
// False. Refusals are attend's lines (AttendUsageError), the unknown keyword's too ("The following argument was not
// expected: --foo"); then check_attend_options.
ParsedOptions parse_options(const std::string& method, const py::dict& params, bool draws, bool save_draws) {
  // A registry method alone: what parsing "--method=METHOD" gives (every other option at its default, nothing to
  // refuse), without the parser's few microseconds, which are most of a small call's.
  if (params.empty() && !draws && !save_draws) {
    const auto& all = attention_methods();
    if (std::any_of(all.begin(), all.end(), [&](const AttentionMethod& m) { return m.name == method; })) {
      ParsedOptions parsed;
      parsed.options.method = method;
      parsed.given.insert("--method");
      return parsed;
    }
  }
  AttendParser& p = parser();
  p.options = AttendOptions{};
  std::vector<std::string> args{"--method=" + method};
  for (const auto& [key, value] : params) {
    std::string flag = "--" + std::string(py::str(key));
    std::replace(flag.begin() + 2, flag.end(), '_', '-');
    if (value.is_none()) continue;
    const CLI::Option* opt = p.app.get_option_no_throw(flag);
    if (opt != nullptr && opt->get_expected_min() == 0) {
      if (!py::isinstance<py::bool_>(value)) throw AttendUsageError(fmt::format("{}: a flag: give True or False, not {}", flag, std::string(py::repr(value))));
      if (value.cast<bool>()) args.push_back(flag);
      continue;
    }
    args.push_back(flag + "=" + value_text(value));
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
  try {
    p.app.parse(std::move(args));
  } catch (const CLI::ParseError& e) {
    throw AttendUsageError(e.what());
  }
  ParsedOptions parsed{p.options, {}};
  for (const CLI::Option* opt : p.app.get_options())
    if (opt->count() > 0) parsed.given.insert(opt->get_name());
  if (draws) parsed.given.insert("--draws");
  if (save_draws) parsed.given.insert("--save-draws");
  check_attend_options(parsed.options, [&](const std::string& flag) { return parsed.given.count(flag) > 0; });
  return parsed;
}

// ------------------------------------------------------------------------------------------------ draws

const char* draw_key(const char* file) {
  const std::string f = file;
  return f == "E.npy" ? "E" : f == "F.npy" ? "F" : "omega";
}

// draws={"E": ..., "F": ...} (linformer) or {"omega": ...} (random-fourier, favor), as attend's --draws DIR holds them
// in E.npy, F.npy, omega.npy; a message names the key where attend names the file.
AttendDrawSource dict_draws(const py::dict& draws) {
  for (const auto& [key, value] : draws) {
    const std::string k = py::str(key);
    if (k != "E" && k != "F" && k != "omega")
      throw AttendUsageError(fmt::format("--draws: unknown key '{}' (E and F for linformer, omega for random-fourier and favor)", k));
  }
  return {"--draws", [](const char* file) { return std::string(draw_key(file)); },
          [draws](const char* file) -> Mat<double> {
            const char* key = draw_key(file);
            if (!draws.contains(key)) throw AttendUsageError(fmt::format("--draws: {}: missing (the method reads it)", key));
            try {
              return draw_matrix(draws[key], key);
            } catch (const NpyError& e) {
              throw AttendUsageError(fmt::format("--draws: {}", e.what()));
            }
          }};
}

py::dict draws_dict(const MethodDraws& draws) {
  py::dict out;
  if (draws.projections) {
    out["E"] = to_numpy(draws.projections->e);
    out["F"] = to_numpy(draws.projections->f);
  }
  if (draws.features) out["omega"] = to_numpy(Mat<double>(draws.features->w));
  return out;
}

// ------------------------------------------------------------------------------------------------ attend

// The inputs of one call, checked and viewed (held alive by `keep`).
struct Inputs {
  std::vector<py::array> keep;
  std::vector<StackView> views;
};

Inputs inputs(const std::vector<std::pair<py::handle, std::string>>& given) {
  Inputs in;
  in.keep.resize(given.size());
  for (std::size_t i = 0; i < given.size(); ++i) in.views.push_back(stack_view(given[i].first, given[i].second, in.keep[i]));
  const StackView& first = in.views.front();
  for (const StackView& v : in.views)
    if (v.is_double != first.is_double)
      v.shape.refuse(fmt::format("dtype {} but {} has {}: give all of them in one precision (float32 or float64)",
                                 v.is_double ? "float64" : "float32", first.shape.label, first.is_double ? "float64" : "float32"));
  return in;
}

std::vector<std::size_t> leading_axes(const StackView& v) { return {v.given.begin(), v.given.end() - 2}; }

std::string shape_text(const std::vector<std::size_t>& shape) {
  return shape.size() == 1 ? fmt::format("({},)", shape[0]) : fmt::format("({})", fmt::join(shape, ", "));
}

// attend's checks from the inputs' shapes on (Q, K, V agreeing, the threads, the memory: of the forward, or of the
// forward and backward), and the method's plan with its draws.
struct Prepared {
  int workers = 1;
  AttendMemory need;
  AttendPlan plan;
};

Prepared prepare(const Inputs& in, const ParsedOptions& p, const py::object& draws, std::size_t scalar_bytes, bool gradients) {
  const StackView &q = in.views[0], &k = in.views[1], &v = in.views[2];
  const AttendOptions& o = p.options;
  check_attend_shapes(q.shape, k.shape, v.shape);
  Prepared r;
  r.workers = attend_workers(o, q.shape.count());
  r.need = gradients ? estimate_attend_grad_memory(o, q.shape, k.shape, v.shape, r.workers, scalar_bytes)
                     : estimate_attend_memory(o, q.shape, k.shape, v.shape, r.workers, scalar_bytes);
  check_attend_memory(o, r.need, q.shape, k.shape, scalar_bytes == 8 ? "double" : "float");
  const AttendDrawSource source = draws.is_none() ? AttendDrawSource{} : dict_draws(draws.cast<py::dict>());
  r.plan = plan_attend(o, q.shape, k.shape, draws.is_none() ? nullptr : &source);
  return r;
}

// What attend does between reading its inputs and writing its output, with the GIL released around the work.
template <typename T>
py::object attend_typed(const Inputs& in, const ParsedOptions& p, const py::object& draws, bool save_draws) {
  const StackView &q = in.views[0], &v = in.views[2];
  const AttendOptions& o = p.options;
  const auto [workers, need, plan] = prepare(in, p, draws, sizeof(T), false);
  py::array_t<T> out = new_output<T>(leading_axes(q), q.shape.n, v.shape.d);
  T* dst = out.mutable_data();
  try {
    py::gil_scoped_release release;
    omp_set_num_threads(workers);
    // Exact and streaming attention's fast kernel reads C order in place and writes the output array itself: no
    // conversion either way (at n 2048, d 64, float, they were most of a call's cost beyond its kernel).
    if (c_order_kernel_applies(*plan.method, plan.impl) && rows_in_c_order<T>(in.views)) {
      check_finite_in_place<T>(in.views);
      std::vector<T*> heads;
      for (Eigen::Index h = 0; h < q.shape.count(); ++h) heads.push_back(dst + h * q.shape.n * v.shape.d);
      run_attention_c_order<T>(*plan.method, plan.impl, heads, head_pointers<T>(in.views[0]), head_pointers<T>(in.views[1]),
                               head_pointers<T>(in.views[2]), q.shape.n, v.shape.n, q.shape.d, v.shape.d, plan.params);
      check_attend_output_c_order(dst, q.shape.count(), q.shape.heads, q.shape.n, v.shape.d, o.method);
    } else {
      const HeadStacks<T> inputs(in.views);
      const HeadStack<T> result = run_attention(*plan.method, plan.impl, inputs[0], inputs[1], inputs[2], plan.params, plan.draws);
      check_attend_output(result, o.method);
      write_head_stacks<T>({{&result, dst}});
    }
  } catch (const std::bad_alloc&) {  // caught with the GIL held again: attend's line, as a MemoryError
    PyErr_SetString(PyExc_MemoryError, fmt::format("out of memory during --method {} (estimated need {}, {} available at the start)",
                                                   o.method, gib_text(need.bytes), gib_text(available_memory())).c_str());
    throw py::error_already_set();
  }
  if (save_draws) return py::make_tuple(out, draws_dict(plan.draws));
  return out;
}

py::object attend(py::handle q, py::handle k, py::handle v, const std::string& method, const py::object& draws, bool save_draws,
                  const py::dict& params) {
  const ParsedOptions p = parse_options(method, params, !draws.is_none(), save_draws);
  const Inputs in = inputs({{q, "--q"}, {k, "--k"}, {v, "--v"}});
  return in.views[0].is_double ? attend_typed<double>(in, p, draws, save_draws) : attend_typed<float>(in, p, draws, save_draws);
}

// ------------------------------------------------------------------------------------------------ attend_grad

template <typename T>
py::tuple attend_grad_typed(const Inputs& in, const ParsedOptions& p, const py::object& draws) {
  const StackView &q = in.views[0], &k = in.views[1], &v = in.views[2], &d_out = in.views[3];
  const AttendOptions& o = p.options;
  const auto [workers, need, plan] = prepare(in, p, draws, sizeof(T), true);
  std::vector<std::size_t> out_shape = leading_axes(q);
  out_shape.push_back(static_cast<std::size_t>(q.shape.n));
  out_shape.push_back(static_cast<std::size_t>(v.shape.d));
  if (d_out.given != out_shape)
    d_out.shape.refuse(fmt::format("shape {} but the output's is {}", shape_text(d_out.given), shape_text(out_shape)));
  if (const std::string why = method_gradient_problem(*plan.method, plan.impl, plan.params, q.shape.n, k.shape.n); !why.empty())
    throw AttendUsageError(why);
  py::array_t<T> dq = new_output<T>(leading_axes(q), q.shape.n, q.shape.d);
  py::array_t<T> dk = new_output<T>(leading_axes(k), k.shape.n, k.shape.d);
  py::array_t<T> dv = new_output<T>(leading_axes(v), v.shape.n, v.shape.d);
  T *dq_p = dq.mutable_data(), *dk_p = dk.mutable_data(), *dv_p = dv.mutable_data();
  {
    py::gil_scoped_release release;
    omp_set_num_threads(workers);
    const HeadStacks<T> inputs(in.views);
    const MethodGradients<T> g = method_gradients(*plan.method, plan.impl, inputs[0], inputs[1], inputs[2], inputs[3], plan.params, plan.draws);
    check_attend_output(g.out, o.method);
    for (const auto& [stack, what] : {std::pair{&g.dq, "dq"}, {&g.dk, "dk"}, {&g.dv, "dv"}})
      check_attend_output(*stack, fmt::format("{}'s backward pass ({})", o.method, what));
    write_head_stacks<T>({{&g.dq, dq_p}, {&g.dk, dk_p}, {&g.dv, dv_p}});
  }
  return py::make_tuple(dq, dk, dv);
}

py::tuple attend_grad(py::handle q, py::handle k, py::handle v, py::handle d_out, const std::string& method, const py::object& draws,
                      const py::dict& params) {
  const ParsedOptions p = parse_options(method, params, !draws.is_none(), false);
  const Inputs in = inputs({{q, "--q"}, {k, "--k"}, {v, "--v"}, {d_out, "dout"}});
  return in.views[0].is_double ? attend_grad_typed<double>(in, p, draws) : attend_grad_typed<float>(in, p, draws);
}

// ------------------------------------------------------------------------------------------------ methods

py::object typed_default(const std::string& type, const std::string& text) {
  if (text.empty()) return py::none();
  if (type == "int") return py::int_(std::stoll(text));
  if (type == "float") return py::float_(std::stod(text));
  return py::str(text);
}

// One option of attend as a notebook can read it: its flag, type, default (None where the default depends on the
// inputs: the help says how), range and help.
py::dict describe_option(const CLI::Option& opt) {
  py::dict d;
  const std::string full = opt.get_type_name();
  const auto colon = full.find(':');
  const std::string type_name = full.substr(0, colon), check = colon == std::string::npos ? "" : full.substr(colon + 1);
  std::string type = opt.get_expected_min() == 0 ? "bool" : type_name == "INT" || type_name == "UINT" ? "int"
                                                     : type_name == "FLOAT" || type_name == "NUMBER" ? "float" : "str";
  d["flag"] = opt.get_name();
  d["type"] = type;
  d["default"] = type == "bool" ? py::object(py::bool_(false)) : typed_default(type, opt.get_default_str());
  d["help"] = opt.get_description();
  py::object lo = py::none(), hi = py::none(), choices = py::none();
  std::string range;
  if (check.rfind("in [", 0) == 0) {
    const auto comma = check.find(',');
    lo = py::int_(std::stoll(check.substr(4, comma - 4)));
    hi = py::int_(std::stoll(check.substr(comma + 1, check.size() - comma - 2)));
    range = check.substr(3);
  } else if (check.rfind("{", 0) == 0) {
    py::list c;
    std::string item;
    for (const char ch : check.substr(1, check.size() - 2)) {
      if (ch == ',') c.append(item), item.clear();
      else item += ch;
    }
    c.append(item);
    choices = c;
    range = check;
  } else if (check == "FINITE") {
    range = "finite";
  } else if (check == "POSITIVE") {
    range = "> 0, finite";
  } else if (check == "UINT") {
    lo = py::int_(0), hi = py::int_(std::numeric_limits<std::uint64_t>::max());
    range = "[0, 2^64 - 1]";
  }
  d["min"] = lo;
  d["max"] = hi;
  d["choices"] = choices;
  d["range"] = range.empty() ? py::object(py::none()) : py::object(py::str(range));
  return d;
}

py::dict methods() {
  AttendParser& p = parser();
  py::dict out;
  for (const AttentionMethod& m : attention_methods()) {
    py::dict entry, params;
    entry["summary"] = m.summary;
    entry["random"] = m.random;
    entry["fast_kernel"] = m.has_fast();
    py::list grads;
    for (const Impl impl : {Impl::reference, Impl::fast})
      if (method_gradient_problem(m, impl, MethodParams{}, 64, 64).empty()) grads.append(to_string(impl));
    entry["gradients"] = grads;
    std::vector<std::string> names = m.parameters;
    for (const char* common : {"impl", "threads"}) names.push_back(common);
    if (m.random) names.push_back("seed");
    for (const std::string& name : names) {
      std::string key = name;
      std::replace(key.begin(), key.end(), '-', '_');
      params[py::str(key)] = describe_option(*p.app.get_option("--" + name));
    }
    entry["parameters"] = params;
    out[py::str(m.name)] = entry;
  }
  return out;
}

// ------------------------------------------------------------------------------------------------ inspect

// A CsvTable as a NumPy structured array, its values read back from the CSV text attnlab_inspect writes (reals in
// their shortest round-trip form: the same doubles).
py::array table_array(const CsvTable& table) {
  const auto rows = parse_csv(table.to_csv());
  const auto& columns = table.columns();
  py::list fields, records;
  std::vector<std::size_t> width(columns.size(), 1);
  for (std::size_t r = 1; r < rows.size(); ++r)
    for (std::size_t c = 0; c < columns.size(); ++c) width[c] = std::max(width[c], rows[r][c].size());
  for (std::size_t c = 0; c < columns.size(); ++c)
    fields.append(py::make_tuple(columns[c].name, columns[c].type == ColumnType::integer ? std::string("i8")
                                                  : columns[c].type == ColumnType::real  ? std::string("f8")
                                                                                         : fmt::format("U{}", width[c])));
  for (std::size_t r = 1; r < rows.size(); ++r) {
    py::list record;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      const std::string& f = rows[r][c];
      if (columns[c].type == ColumnType::integer) record.append(py::int_(std::stoll(f)));
      else if (columns[c].type == ColumnType::real) record.append(py::float_(std::stod(f)));
      else record.append(py::str(f));
    }
    records.append(py::tuple(record));
  }
  py::module_ np = py::module_::import("numpy");
  return np.attr("array")(records, np.attr("dtype")(fields));
}

// The claims rows as claims.csv holds them (kLedgerHeader's columns, rows in the ledger's order), observed and
// threshold NaN where empty.
py::array claims_array(std::vector<ClaimRow> rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const ClaimRow& a, const ClaimRow& b) { return claim_id_less(a.id, b.id); });
  CsvTable t({text_col("id"), text_col("source"), text_col("verdict"), text_col("metric"), real_col("observed", true),
              real_col("threshold", true), text_col("evidence"), text_col("note"), text_col("experiment")});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const ClaimRow& r : rows)
    t.add_row({r.id, claim_source(r.id), to_string(r.verdict), r.metric, r.observed.value_or(nan), r.threshold.value_or(nan),
               r.evidence, r.note, r.experiment});
  return table_array(t);
}

py::dict inspection_dict(const InspectionRun& run) {
  py::dict d;
  d["title"] = inspection_title(run.inspection);
  d["summary"] = run.claims.summary;
  d["heads"] = table_array(inspection_heads_table(run.inspection));
  d["layers"] = table_array(inspection_layers_table(run.inspection));
  d["costs"] = table_array(inspection_costs_table(run.inspection));
  d["param_counts"] = table_array(inspection_param_counts_table(run.inspection));
  d["timing"] = table_array(inspection_timing_table(run.inspection));
  d["claims"] = claims_array(run.claims.rows);
  return d;
}

// A keyword checked by the validator attnlab_inspect's flag has, refused in its words ("--heads: 0 is not in [1, 1048576]").
void check_value(const char* flag, const CLI::Validator& check, const py::handle value) {
  std::string text = value_text(value);
  if (const std::string why = check(text); !why.empty()) throw InspectionUsageError(fmt::format("{}: {}", flag, why));
}

Eigen::Index count_option(const char* flag, const py::object& value) {
  if (value.is_none()) return 0;
  check_value(flag, integer_in(1, kInspectMaxHeads), value);
  return value.cast<Eigen::Index>();
}

int inspect_threads(const py::object& threads) {
  if (threads.is_none()) return omp_get_num_procs();
  check_value("--threads", integer_in(1, kInspectMaxThreads), threads);
  return threads.cast<int>();
}

py::dict inspect(const std::string& path, const std::string& layout, const py::object& heads, const py::object& kv_heads,
                 const py::object& prefix, const py::object& q_pattern, const py::object& k_pattern, const py::object& q_bias_pattern,
                 const py::object& k_bias_pattern, bool transpose, const std::string& precision, const py::object& threads) {
  check_value("--layout", CLI::IsMember(qk_layout_names()), py::str(layout));
  QkLayoutOptions o;
  o.layout = layout;
  o.heads = count_option("--heads", heads);
  o.kv_heads = count_option("--kv-heads", kv_heads);
  if (!prefix.is_none()) o.prefix = prefix.cast<std::string>();
  const std::pair<const char*, const py::object*> patterns[] = {
      {"--q-pattern", &q_pattern}, {"--k-pattern", &k_pattern}, {"--q-bias-pattern", &q_bias_pattern}, {"--k-bias-pattern", &k_bias_pattern}};
  check_layout_flags(layout, [&](const std::string& flag) {
    if (flag == "--transpose") return transpose;
    for (const auto& [name, value] : patterns)
      if (flag == name) return !value->is_none();
    return false;
  });
  o.q_pattern = q_pattern.is_none() ? "" : q_pattern.cast<std::string>();
  o.k_pattern = k_pattern.is_none() ? "" : k_pattern.cast<std::string>();
  o.q_bias_pattern = q_bias_pattern.is_none() ? "" : q_bias_pattern.cast<std::string>();
  o.k_bias_pattern = k_bias_pattern.is_none() ? "" : k_bias_pattern.cast<std::string>();
  o.transpose = transpose;
  check_value("--precision", CLI::IsMember(inspection_precisions()), py::str(precision));
  const int n_threads = inspect_threads(threads);
  InspectionRun run;
  {
    py::gil_scoped_release release;
    omp_set_num_threads(n_threads);
    run = run_inspection(path, o, precision, n_threads, "");
  }
  return inspection_dict(run);
}

py::dict inspect_heads(py::handle wq, py::handle wk, const py::object& heads, const py::object& kv_heads, const py::object& bq,
                       const py::object& bk, bool transpose, const std::string& precision, const py::object& threads,
                       const std::string& name) {
  QkArraysSpec spec;
  if (heads.is_none()) throw InspectionUsageError("--heads: give the number of query heads");
  spec.heads = count_option("--heads", heads);
  spec.kv_heads = count_option("--kv-heads", kv_heads);
  std::vector<py::array> keep(4);
  spec.wq = qk_array(wq, "Wq", keep[0]);
  spec.wk = qk_array(wk, "Wk", keep[1]);
  if (!bq.is_none()) spec.bq = qk_array(bq, "bq", keep[2]);
  if (!bk.is_none()) spec.bk = qk_array(bk, "bk", keep[3]);
  spec.transpose = transpose;
  spec.name = name;
  check_value("--precision", CLI::IsMember(inspection_precisions()), py::str(precision));
  const int n_threads = inspect_threads(threads);
  InspectionRun run;
  {
    py::gil_scoped_release release;
    omp_set_num_threads(n_threads);
    QkArrays arrays(std::move(spec));
    run = inspect_checkpoint(arrays, name, precision, n_threads, "");
  }
  return inspection_dict(run);
}

// ------------------------------------------------------------------------------------------------ make bench

// The kernel alone, as bench_attention times it: run_attention on head stacks made beforehand, `runs` times, each
// run's seconds (steady clock). For make bench's rows beside attnlab.attend (bench/bench_python.py); GIL released.
template <typename T>
std::vector<double> kernel_seconds_typed(const Inputs& in, const ParsedOptions& p, int runs) {
  const auto [workers, need, plan] = prepare(in, p, py::none(), sizeof(T), false);
  std::vector<double> seconds;
  py::gil_scoped_release release;
  omp_set_num_threads(workers);
  const HeadStacks<T> inputs(in.views);
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const HeadStack<T> out = run_attention(*plan.method, plan.impl, inputs[0], inputs[1], inputs[2], plan.params, plan.draws);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return seconds;
}

std::vector<double> kernel_seconds(py::handle q, py::handle k, py::handle v, const std::string& method, int runs, const py::dict& params) {
  const ParsedOptions p = parse_options(method, params, false, false);
  const Inputs in = inputs({{q, "--q"}, {k, "--k"}, {v, "--v"}});
  return in.views[0].is_double ? kernel_seconds_typed<double>(in, p, runs) : kernel_seconds_typed<float>(in, p, runs);
}

// Whether an array would be read in place (no NumPy copy): for the checks of what the documentation promises.
bool read_in_place(py::handle obj) {
  bool copied = false;
  readable(obj, copied);
  return !copied;
}

}  // namespace

PYBIND11_MODULE(_attnlab, m) {
  m.doc() = "attnlab's attention methods, their gradients and the checkpoint inspector on NumPy arrays (the package "
            "attnlab wraps these functions; docs/python.md).";
  // Heads run in parallel; Eigen's own threading would change summation order with the thread count.
  Eigen::setNbThreads(1);
  // Bad input is a ValueError with attend's (or attnlab_inspect's) line; a non-finite result a NonFiniteError, itself
  // a ValueError (attend's exit status 1 rather than 2).
  static py::exception<AttendFailure> nonfinite(m, "NonFiniteError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const AttendFailure& e) {
      nonfinite(e.what());
    } catch (const AttendUsageError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const InspectionUsageError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const QkLayoutError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const SafetensorsError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const CheckpointError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const NpyError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  m.def("attend", &attend, py::arg("q"), py::arg("k"), py::arg("v"), py::arg("method"), py::arg("draws"), py::arg("save_draws"),
        py::arg("params"));
  m.def("attend_grad", &attend_grad, py::arg("q"), py::arg("k"), py::arg("v"), py::arg("dout"), py::arg("method"), py::arg("draws"),
        py::arg("params"));
  m.def("methods", &methods);
  m.def("inspect", &inspect, py::arg("path"), py::arg("layout"), py::arg("heads"), py::arg("kv_heads"), py::arg("prefix"),
        py::arg("q_pattern"), py::arg("k_pattern"), py::arg("q_bias_pattern"), py::arg("k_bias_pattern"), py::arg("transpose"),
        py::arg("precision"), py::arg("threads"));
  m.def("inspect_heads", &inspect_heads, py::arg("Wq"), py::arg("Wk"), py::arg("heads"), py::arg("kv_heads"), py::arg("bq"),
        py::arg("bk"), py::arg("transpose"), py::arg("precision"), py::arg("threads"), py::arg("name"));
  m.def("_kernel_seconds", &kernel_seconds, py::arg("q"), py::arg("k"), py::arg("v"), py::arg("method"), py::arg("runs"),
        py::arg("params"));
  m.def("_read_in_place", &read_in_place, py::arg("array"));
  m.def("_kept_bytes", &kept_stack_bytes);
}
