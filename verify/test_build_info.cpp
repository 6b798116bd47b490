// The build's vector ISA (lab/build_isa.hpp) and bin/attnlab_build_info, which the run scripts read into
// results/RUNS.md and slurm/compare_runs.py reads back: the level agrees with what Eigen vectorizes with,
// the program prints it in its fixed format, and refuses arguments.
#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "attnlab/lab/build_id.hpp"
#include "attnlab/lab/build_isa.hpp"
#include "support.hpp"

using attnlab::testing::run_binary;

TEST_CASE("build_isa names a level that Eigen's own SIMD list agrees with") {
  const std::string isa = attnlab::build_isa(), simd = attnlab::eigen_simd();
  INFO("build_isa " << isa << ", Eigen: " << simd);
  const auto has = [&](std::string_view set) { return simd.find(set) != std::string::npos; };
  if (isa == "avx512") CHECK(has("AVX512"));
  else if (isa == "avx2") CHECK((has("AVX2") && has("FMA") && !has("AVX512")));
  else if (isa == "avx") CHECK((has("AVX") && !has("AVX2")));
  else if (isa == "sse4.2") CHECK((has("SSE4.2") && !has("AVX")));
  else if (isa == "portable") CHECK((has("SSE2") && !has("AVX") && !has("SSE4.2")));
  else CHECK((isa == "aarch64" || isa == "unknown"));
}

TEST_CASE("attnlab_build_info prints build, isa and eigen_simd, one key<TAB>value line each; arguments refused") {
  const auto r = run_binary("attnlab_build_info", {});
  INFO(r.output);
  REQUIRE(r.exit_status == 0);
  CHECK(r.output == std::string("build\t") + attnlab::build_id() + "\nisa\t" + attnlab::build_isa() + "\neigen_simd\t" +
                        attnlab::eigen_simd() + "\n");
  const auto bad = run_binary("attnlab_build_info", {"--isa"});
  CHECK(bad.exit_status == 2);
  CHECK(bad.output.find("'--isa'") != std::string::npos);
}
