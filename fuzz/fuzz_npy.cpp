// fuzz_npy.cpp — libFuzzer target: bytes as a .npy file -> io::read_npy.
// A tensor that loads is read to its last byte (touch) and written back with
// io::write_npy; reading that file again must give the same element type,
// shape and bytes (a round-trip failure traps).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_util.h"
#include "spindle/io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spindle;
  static fuzz::MemFile in("fuzz_npy_in");
  static fuzz::MemFile out("fuzz_npy_out");
  fuzz::guarded([&] {
    Result<Tensor> r = io::read_npy(in.write(data, size));
    if (!r.is_ok()) return;
    const Tensor& t = r.value();
    fuzz::touch(t);
    if (!io::write_npy(out.path(), t).is_ok()) return;
    Result<Tensor> back = io::read_npy(out.path());
    if (!back.is_ok() || back->dtype() != t.dtype() || back->shape() != t.shape() || back->nbytes() != t.nbytes() ||
        std::memcmp(back->raw_data(), t.raw_data(), t.nbytes()) != 0)
      __builtin_trap();  // write_npy / read_npy disagree on a tensor read_npy accepted
  });
  return 0;
}
