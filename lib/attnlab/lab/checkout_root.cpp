// The checkout a path lies in (checkout_root.hpp).
#include "attnlab/lab/checkout_root.hpp"

#include <system_error>

namespace attnlab {

std::optional<std::filesystem::path> checkout_root(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dir = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) return std::nullopt;
  for (;;) {
    if (fs::is_regular_file(dir / "CMakeLists.txt", ec) && fs::is_regular_file(dir / "tools" / "make_report.py", ec) &&
        fs::is_regular_file(dir / "lib" / "attnlab" / "io" / "verdicts.tsv", ec))
      return dir;
    if (!dir.has_parent_path() || dir.parent_path() == dir) return std::nullopt;
    dir = dir.parent_path();
  }
}

}  // namespace attnlab
