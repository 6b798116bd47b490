// Files beside the installed program (program_data.hpp).
#include "attnlab/lab/program_data.hpp"

#include <fmt/format.h>
#include <system_error>
#include <unistd.h>

namespace attnlab {

std::filesystem::path program_data_dir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw ProgramDataError(fmt::format("cannot tell where this program is (/proc/self/exe: {})", ec.message()));
  return exe.parent_path().parent_path() / "share" / "attnlab";
}

std::filesystem::path program_data_file(const std::string& relative) {
  const std::filesystem::path path = program_data_dir() / relative;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec) || ::access(path.c_str(), R_OK) != 0)
    throw ProgramDataError(fmt::format("{} is missing or unreadable: the program's installation is incomplete (make build, "
                                       "or cmake --install build --prefix P, puts it there)",
                                       path.string()));
  return path;
}

}  // namespace attnlab
