// attnlab_build_info: what this build is, for the scripts that record a run (results/RUNS.md) and compare
// two (slurm/compare_runs.py): one "key<TAB>value" line each for
//   build       the source tree's commit (lab/build_id.hpp; "-dirty" with uncommitted changes)
//   isa         the vector instruction set the build targets (lab/build_isa.hpp: avx512, avx2, portable, ...)
//   eigen_simd  the instruction sets Eigen vectorizes with
// Every program of a build is compiled with the same flags, so this one speaks for all of them.
#include <fmt/format.h>

#include <string_view>

#include "attnlab/lab/build_id.hpp"
#include "attnlab/lab/build_isa.hpp"
#include "attnlab/lab/experiment_cli.hpp"

namespace attnlab_build_info {  // compiled beside other programs, linked alone (CMakeLists.txt: attnlab_programs)

int main(int argc, char** argv) {
  using namespace attnlab;
  if (argc == 2 && (std::string_view(argv[1]) == "--help" || std::string_view(argv[1]) == "-h")) {
    fmt::print("attnlab_build_info: prints this build's id, vector ISA and Eigen's SIMD sets, one key<TAB>value line each\n"
               "usage: attnlab_build_info\n");
    return 0;
  }
  if (argc > 1) {
    fmt::print(stderr, "attnlab_build_info: unexpected argument '{}' (it takes none; --help)\n", argv[1]);
    return kExitUsage;
  }
  fmt::print("build\t{}\nisa\t{}\neigen_simd\t{}\n", build_id(), build_isa(), eigen_simd());
  return 0;
}

}  // namespace attnlab_build_info
