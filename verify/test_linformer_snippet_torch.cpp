// The explainer's Linformer module (seed 003) run under PyTorch itself, its outcome compared with the C++
// trace (test_multihead_layer.cpp checks the C++ side). Needs an interpreter with torch: ATTNLAB_PYTHON
// (ctest sets CMake's ATTNLAB_PYTHON; python3 from PATH when unset). Without torch, or without the seed
// file, the test case is skipped and ctest reports the test as not run (exit 77).
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "attnlab/attention/linformer_snippet.hpp"
#include "support.hpp"

using namespace attnlab;

TEST_CASE("explainer snippet under PyTorch: the same outcome as the C++ trace") {
  namespace fs = std::filesystem;
  const fs::path script = fs::path(ATTNLAB_SOURCE_DIR) / "verify" / "linformer_snippet_torch.py";
  const fs::path seed = fs::path(ATTNLAB_SOURCE_DIR).parent_path() / "shared" / "seeds" / "003_cab8b9be341236c2.txt";
  const char* env_python = std::getenv("ATTNLAB_PYTHON");
  const std::string python = env_python != nullptr && *env_python != '\0' ? env_python : "python3";
  if (std::system(("'" + python + "' -c 'import torch' >/dev/null 2>&1").c_str()) != 0) {
    testing::skip_test(python + " cannot import torch (Debian: python3-torch): the PyTorch run of the snippet is skipped");
    return;
  }
  if (!fs::exists(seed)) {
    testing::skip_test("seed 003 not found at " + seed.string() + ": the PyTorch run of the snippet is skipped");
    return;
  }
  const std::string cmd = "'" + python + "' '" + script.string() + "' '" + seed.string() + "' 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  REQUIRE(pipe);
  std::string output;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe.get())) output += buf;
  INFO(output);
  // The script prints one line per case in the same words as the C++ trace.
  for (const auto& [label, cfg] :
       {std::pair{"documented", snippet_as_written(4, 4096, 512, 8, 256)},
        std::pair{"seq_len=dim_head", snippet_as_written(4, 64, 512, 8, 256)}}) {
    const SnippetTrace t = trace_snippet(cfg);
    const std::string expected = std::string(label) + ": " +
                                 (t.ran ? "output " + shape_string(t.output_shape) : "RuntimeError " + t.error);
    CHECK(output.find(expected) != std::string::npos);
  }
}
