// libFuzzer entry for the IDX reader: any input is parsed as an image file and as a label file
// (raw or gzip), each either accepted or refused with one clean IdxError line.
//
// Built and run by `make fuzz` (clang++ -fsanitize=fuzzer,address,undefined). Besides the
// sanitizers' checks, an input fails when parsing throws anything but IdxError, when the message is
// not one printable line starting with the name, or when an accepted file's counts disagree with
// its data.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "attnlab/io/idx.hpp"

namespace {

bool one_printable_line(const std::string& s) {
  for (const char c : s)
    if (c < 0x20 || c == 0x7f) return false;
  return true;
}

void check_refusal(const attnlab::IdxError& e) {
  const std::string message = e.what();
  if (message.rfind("fuzz.idx: ", 0) != 0 || !one_printable_line(message)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::uint8_t> bytes(data, data + size);
  try {
    const attnlab::IdxImages im = attnlab::parse_idx_images(bytes, "fuzz.idx");
    if (im.rows < 1 || im.cols < 1 || static_cast<std::size_t>(im.count * im.rows * im.cols) != im.pixels.size()) std::abort();
  } catch (const attnlab::IdxError& e) {
    check_refusal(e);
  }
  try {
    const std::vector<std::uint8_t> labels = attnlab::parse_idx_labels(bytes, "fuzz.idx");
    for (const std::uint8_t l : labels)
      if (l >= attnlab::kIdxClasses) std::abort();
  } catch (const attnlab::IdxError& e) {
    check_refusal(e);
  }
  return 0;
}
