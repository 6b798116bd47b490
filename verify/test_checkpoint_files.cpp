// Hostile checkpoints: every file bounded before it is read, the manifest saying one thing once and
// only what the files hold, and a model's widths checked against the memory left before it is built.
#include <doctest/doctest.h>

#include <chrono>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "attnlab/io/bounded_file.hpp"
#include "attnlab/io/npy.hpp"
#include "attnlab/model/checkpoint.hpp"
#include "attnlab/model/vit.hpp"
#include "support.hpp"

using namespace attnlab;
using attnlab::testing::read_text;
using attnlab::testing::ScratchDir;
namespace fs = std::filesystem;

namespace checkpoint_files {

// A small exact-attention ViT on 8 x 8 images (16 tokens), saved: the checkpoint the cases below corrupt.
ViTConfig small_config() {
  ViTConfig c;
  c.image = 8;
  c.D = 8;
  c.heads = 2;
  c.layers = 1;
  c.mlp = 12;
  c.seed = 5;
  return c;
}

std::unique_ptr<ViT<float>> small_model() {
  return std::make_unique<ViT<float>>(small_config());
}

fs::path saved_checkpoint(const ScratchDir& dir, const std::string& name = "ckpt") {
  auto model = small_model();
  save_checkpoint(*model, dir.path() / name, 3);
  return dir.path() / name;
}

// The manifest's text with the first `from` replaced by `to` (which must be there).
void edit_manifest(const fs::path& ckpt, const std::string& from, const std::string& to) {
  std::string text = read_text(ckpt / "manifest.json");
  const auto at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, "the manifest holds no '" << from << "'");
  text.replace(at, from.size(), to);
  std::ofstream(ckpt / "manifest.json", std::ios::trunc) << text;
}

std::string checkpoint_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "(no CheckpointError)";
}

}  // namespace checkpoint_files

TEST_CASE("bug: a manifest listing block0.attn.Wq twice (the second at Wk.npy) loaded Wk as Wq; now refused") {
  ScratchDir dir;
  const fs::path ckpt = checkpoint_files::saved_checkpoint(dir);
  checkpoint_files::edit_manifest(ckpt, R"({"name": "block0.attn.bq")",
                R"({"name": "block0.attn.Wq", "file": "block0.attn.Wk.npy", "shape": [8, 8], "dtype": "float32", "kind": "parameter"},
    {"name": "block0.attn.bq")");
  auto model = checkpoint_files::small_model();
  const std::string message = checkpoint_files::checkpoint_error([&] { load_checkpoint(*model, ckpt); });
  CHECK(message.find("\"block0.attn.Wq\" is listed twice") != std::string::npos);
  CHECK(message.find('\n') == std::string::npos);
}

TEST_CASE("a tensor whose kind or dtype is not what the model and the file hold is refused") {
  ScratchDir dir;
  auto model = checkpoint_files::small_model();
  {
    const fs::path ckpt = checkpoint_files::saved_checkpoint(dir, "kind");
    checkpoint_files::edit_manifest(ckpt, R"("block0.attn.Wq.npy", "shape": [8, 8], "dtype": "float32", "kind": "parameter")",
                  R"("block0.attn.Wq.npy", "shape": [8, 8], "dtype": "float32", "kind": "buffer")");
    CHECK(checkpoint_files::checkpoint_error([&] { load_checkpoint(*model, ckpt); }).find("\"block0.attn.Wq\" is a buffer in the manifest, the model's is a parameter") !=
          std::string::npos);
  }
  {
    // The manifest says float32, the file holds float64 (numpy.save of a double array).
    const fs::path ckpt = checkpoint_files::saved_checkpoint(dir, "dtype");
    NpyArray a = read_npy(ckpt / "block0.attn.Wq.npy");
    a.dtype = NpyDtype::float64;
    write_npy(ckpt / "block0.attn.Wq.npy", a);
    CHECK(checkpoint_files::checkpoint_error([&] { load_checkpoint(*model, ckpt); }).find("block0.attn.Wq.npy holds float64, but the manifest says") !=
          std::string::npos);
  }
}

TEST_CASE("bug: manifest.json as a FIFO hung every reader; now refused at once") {
  ScratchDir dir;
  const fs::path ckpt = checkpoint_files::saved_checkpoint(dir);
  fs::remove(ckpt / "manifest.json");
  REQUIRE(::mkfifo((ckpt / "manifest.json").c_str(), 0644) == 0);
  auto read = std::async(std::launch::async, [&] { return checkpoint_files::checkpoint_error([&] { read_checkpoint_info(ckpt); }); });
  if (read.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    // The reader is blocked in open(2): give it a writer, so the test ends, and fail.
    const int fd = ::open((ckpt / "manifest.json").c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
    FAIL("read_checkpoint_info blocked on a FIFO for 10 s");
  }
  const std::string message = read.get();
  INFO(message);
  CHECK(message.find("is a FIFO, not a regular file") != std::string::npos);
}

TEST_CASE("bug: manifest.json as a symbolic link to /dev/zero was read for 2 GB; now refused before reading") {
  ScratchDir dir;
  const fs::path ckpt = checkpoint_files::saved_checkpoint(dir);
  fs::remove(ckpt / "manifest.json");
  fs::create_symlink("/dev/zero", ckpt / "manifest.json");
  const std::string message = checkpoint_files::checkpoint_error([&] { read_checkpoint_info(ckpt); });
  INFO(message);
  CHECK(message.find("is a character device, not a regular file") != std::string::npos);
  // A regular file larger than a manifest can be is refused by its size, unread (a sparse 17 MiB file).
  fs::remove(ckpt / "manifest.json");
  { std::ofstream(ckpt / "manifest.json") << "{"; }
  fs::resize_file(ckpt / "manifest.json", (std::uintmax_t{17} << 20));
  CHECK(checkpoint_files::checkpoint_error([&] { read_checkpoint_info(ckpt); }).find("more than the 16 MiB a manifest may hold") != std::string::npos);
}

TEST_CASE("bug: a manifest with D, L or the image at 2^20 (inside the accepted range) ended in bad_alloc; now one line") {
  // Each describes a model far beyond any machine's memory (D = 2^20: 2^42 weights per block); the widths
  // are checked against the memory left before anything is allocated, here and in ViT's constructor.
  ScratchDir dir;
  const std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> cases = {
      {"D", {{R"("D": 8,)", R"("D": 1048576,)"}}},
      {"L", {{R"("D": 8,)", R"("D": 64,)"}, {R"("L": 1,)", R"("L": 1048576,)"}}},  // the default width, 2^20 blocks
      // n must stay the windows' count: ((2^20 + 2 - 4) / 2 + 1)^2.
      {"image", {{R"("image": 8,)", R"("image": 1048576,)"}, {R"("n": 16,)", R"("n": 274877906944,)"}}},
  };
  for (const auto& [what, edits] : cases) {
    INFO(what);
    const fs::path ckpt = checkpoint_files::saved_checkpoint(dir, what);
    for (const auto& [from, to] : edits) checkpoint_files::edit_manifest(ckpt, from, to);
    const std::string message = checkpoint_files::checkpoint_error([&] { read_checkpoint_info(ckpt); });
    CHECK(message.find("needs at least") != std::string::npos);
    CHECK(message.find("available") != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
  ViTConfig huge = checkpoint_files::small_config();
  huge.D = 1 << 20;
  huge.heads = 1;
  CHECK_THROWS_WITH_AS(ViT<float>{huge},
                       doctest::Contains("needs at least"), std::invalid_argument);
  // The estimate is a lower bound: the small model fits, and is far below a GiB.
  CHECK(vit_memory_lower_bound(checkpoint_files::small_config(), sizeof(float)) < 1e6);
  CHECK(vit_memory_problem(checkpoint_files::small_config(), sizeof(float)).empty());
}

TEST_CASE("BoundedFile: regular files only, the size bound before any read, reads within the size") {
  ScratchDir dir;
  const fs::path file = dir.path() / "f";
  { std::ofstream(file) << "0123456789"; }
  BoundedFile f(file, 10, "ten bytes");
  CHECK(f.size() == 10);
  char buf[4] = {};
  f.read_at(6, buf, 4);
  CHECK(std::string(buf, 4) == "6789");
  CHECK_THROWS_WITH_AS(f.read_at(7, buf, 4), doctest::Contains("goes past the end"), BoundedFileError);
  CHECK(read_bounded_text(file, 10, "ten bytes") == "0123456789");
  CHECK_THROWS_WITH_AS(read_bounded_text(file, 9, "the limit"), (file.string() + ": 10 bytes, more than the limit (9 bytes)").c_str(),
                       BoundedFileError);
  CHECK_THROWS_WITH_AS(BoundedFile(dir.path(), 100, "x"), doctest::Contains("is a directory, not a regular file"), BoundedFileError);
  CHECK_THROWS_WITH_AS(BoundedFile(dir.path() / "none", 100, "x"), doctest::Contains("no such file"), BoundedFileError);
  CHECK_THROWS_WITH_AS(BoundedFile("/dev/null", 100, "x"), doctest::Contains("is a character device"), BoundedFileError);
  REQUIRE(::mkfifo((dir.path() / "fifo").c_str(), 0644) == 0);
  try {
    BoundedFile fifo(dir.path() / "fifo", 100, "x");
    FAIL("a FIFO was opened");
  } catch (const BoundedFileError& e) {
    CHECK(e.problem() == "is a FIFO, not a regular file");
  }
}
