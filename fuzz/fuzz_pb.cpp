// fuzz_pb.cpp — libFuzzer target: bytes as a backend-test .pb file ->
// io::read_tensor_pb, and io::read_value_pb as a sequence or an
// optional value (the first byte picks which reader; the rest is the file).
// Whatever loads is read to its last byte.
#include <cstddef>
#include <cstdint>

#include <onnx/onnx_pb.h>

#include "fuzz_util.h"
#include "io/tensor_proto.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spindle;
  static fuzz::MemFile file("fuzz_pb");
  if (size == 0) return 0;
  const int mode = data[0] % 3;
  const std::string& path = file.write(data + 1, size - 1);
  fuzz::guarded([&] {
    Result<Tensor> r = [&]() -> Result<Tensor> {
      if (mode == 0) return io::read_tensor_pb(path);
      onnx::TypeProto type;
      onnx::TypeProto* elem = type.mutable_sequence_type()->mutable_elem_type();
      if (mode == 2) {
        // optional(tensor(float))
        type.Clear();
        elem = type.mutable_optional_type()->mutable_elem_type();
      }
      elem->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
      return io::read_value_pb(path, type);
    }();
    if (r.is_ok()) fuzz::touch(r.value());
  });
  return 0;
}
