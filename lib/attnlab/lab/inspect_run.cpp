// attnlab_inspect's pipeline (inspect_run.hpp).
#include "attnlab/lab/inspect_run.hpp"

#include <fmt/format.h>

namespace attnlab {

void check_layout_flags(const std::string& layout, const std::function<bool(const std::string& flag)>& given) {
  const bool custom = layout == "custom";
  for (const char* flag : {"--q-pattern", "--k-pattern", "--q-bias-pattern", "--k-bias-pattern", "--transpose"})
    if (given(flag) && !custom) throw InspectionUsageError(fmt::format("{} applies to --layout custom only", flag));
}

bool inspection_in_double(const QkCheckpoint& c, const std::string& precision, const std::string& model) {
  const bool needs_double = c.plan().needs_double;
  if (precision == "float" && needs_double)
    throw InspectionUsageError(fmt::format("--precision float: {} holds F64 weights, which float cannot hold exactly", model));
  return precision == "double" || (precision == "auto" && needs_double);
}

InspectionRun inspect_checkpoint(QkCheckpoint& c, const std::string& model, const std::string& precision, int threads,
                                 const std::filesystem::path& evidence_dir) {
  InspectionRun r;
  r.inspection = inspect_model(c, model, inspection_in_double(c, precision, model), threads);
  r.claims = judge_inspection(r.inspection, evidence_dir);
  return r;
}

InspectionRun run_inspection(const std::filesystem::path& model, const QkLayoutOptions& layout, const std::string& precision,
                             int threads, const std::filesystem::path& evidence_dir) {
  const auto checkpoint = QkCheckpoint::open(model, layout);
  return inspect_checkpoint(*checkpoint, model.string(), precision, threads, evidence_dir);
}

}  // namespace attnlab
