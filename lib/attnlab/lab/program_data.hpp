// The files a program needs besides itself (the figure scripts of tools/ and the verdict vocabulary they read),
// found relative to the program's own location: <prefix>/bin/<program> reads <prefix>/share/attnlab/<file>.
// The build tree has the same layout (CMake copies the files into <build>/share/attnlab), so a program works the
// same from the build tree, from `cmake --install build --prefix P`, and with the checkout moved or gone:
// nothing depends on where it was built.
//
//   const std::filesystem::path script = program_data_file("tools/inspect_figure.py");  // throws ProgramDataError
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

namespace attnlab {

// A file the program needs is not where its installation keeps it. what() names the file and where it looked.
struct ProgramDataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// <directory of the running executable>/../share/attnlab (from /proc/self/exe, with symbolic links resolved).
std::filesystem::path program_data_dir();

// program_data_dir() / relative, checked to be a readable regular file; ProgramDataError otherwise.
std::filesystem::path program_data_file(const std::string& relative);

}  // namespace attnlab
