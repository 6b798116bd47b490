// libFuzzer entry for the .npy reader: any input is parsed, or refused with one clean NpyError line.
//
// Built and run by `make fuzz` (clang++ -fsanitize=fuzzer,address,undefined). Besides the
// sanitizers' checks, an input fails when parse_npy throws anything but NpyError, when the
// message is not one printable line starting with the name, or when an accepted array does
// not survive format_npy -> parse_npy unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include "attnlab/io/npy.hpp"

namespace {

bool one_printable_line(const std::string& s) {
  for (const char c : s)
    if (c < 0x20 || c == 0x7f) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const unsigned char> bytes(data, size);
  attnlab::NpyArray array;
  try {
    array = attnlab::parse_npy(bytes, "fuzz.npy");
  } catch (const attnlab::NpyError& e) {
    const std::string message = e.what();
    if (message.rfind("fuzz.npy: ", 0) != 0 || !one_printable_line(message)) std::abort();
    return 0;
  }
  // Accepted: our own bytes for it must read back to the same array.
  const std::string again = attnlab::format_npy(array);
  const attnlab::NpyArray back =
      attnlab::parse_npy({reinterpret_cast<const unsigned char*>(again.data()), again.size()}, "again.npy");
  if (back.shape != array.shape || back.dtype != array.dtype || back.values != array.values) std::abort();
  return 0;
}
