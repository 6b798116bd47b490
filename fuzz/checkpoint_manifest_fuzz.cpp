// libFuzzer entry for a checkpoint's manifest.json: any text is parsed, or refused with one clean
// CheckpointError line.
//
// Built and run by `make fuzz` (clang++ -fsanitize=fuzzer,address,undefined). Besides the
// sanitizers' checks (deep nesting must not exhaust the stack, no float-to-integer conversion out of
// range), an input fails when parsing throws anything but CheckpointError, when the message is not
// one line starting with the checkpoint's name, or when an accepted manifest describes patch windows
// that do not tile its image.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "attnlab/model/checkpoint_manifest.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const attnlab::CheckpointManifest m = attnlab::parse_checkpoint_manifest(text, "checkpoint fuzz");
    const attnlab::ViTConfig& c = m.info.config;
    if (c.grid() < 1 || (c.image + 2 * c.pad - c.patch) % c.stride != 0) std::abort();
  } catch (const attnlab::CheckpointError& e) {
    const std::string message = e.what();
    // The problem may quote the manifest's own text (a key or a method name): only the first line is ours.
    if (message.rfind("checkpoint fuzz: manifest.json: ", 0) != 0) std::abort();
  }
  return 0;
}
