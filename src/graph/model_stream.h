// model_stream.h — a model file read without its weights' bytes: the
// serialized ModelProto with the raw_data of the main graph's large
// initializers left out, and where in the file each of those bytes lies.
//
// Parsing the whole file makes protobuf copy every weight into a string,
// which the loader then copies into an aligned tensor: two copies of the
// weights written (and their pages faulted in). Parsing the stripped bytes
// and reading each left-out payload from the file straight into its tensor
// writes them once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "io/regular_file.h"
#include "io/tensor_proto.h"

namespace spindle::graph {

// A model file read in chunks as protobuf parses it (the file's bytes are
// never held whole beside the parsed model); skipped bytes are not read.
// Reads stop at the size checked when the file was opened.
class FileChunks final : public google::protobuf::io::CopyingInputStream {
 public:
  explicit FileChunks(const io::RegularFile& file) : file_(file) {}
  int Read(void* buffer, int size) override;
  int Skip(int count) override;

 private:
  const io::RegularFile& file_;
  uint64_t offset_ = 0;
};

struct StrippedModel {
  std::string bytes;  // the ModelProto without the payloads below
  // Per initializer of the main graph, in order: where its raw_data lies in
  // the file when it was left out of `bytes`.
  std::vector<std::optional<io::FileRange>> payloads;
};

// Payloads smaller than this stay in the stripped bytes.
inline constexpr size_t kStripPayloadBytes = 4096;

// The stripped model, or nullopt when the file is not laid out as expected
// (malformed, a field repeated that protobuf would merge...): the caller then
// parses the file as it is, which also reports its errors precisely.
std::optional<StrippedModel> strip_initializer_payloads(const io::RegularFile& file);

}  // namespace spindle::graph
