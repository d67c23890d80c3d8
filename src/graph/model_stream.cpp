// model_stream.cpp — see model_stream.h.
#include "graph/model_stream.h"

#include <algorithm>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>

namespace spindle::graph {

int FileChunks::Read(void* buffer, int size) {
  const uint64_t n = std::min<uint64_t>(static_cast<uint64_t>(size), file_.size() - offset_);
  if (n == 0) return 0;
  if (!file_.read_at(offset_, buffer, static_cast<size_t>(n)).is_ok()) return -1;
  offset_ += n;
  return static_cast<int>(n);
}

int FileChunks::Skip(int count) {
  const uint64_t n = std::min<uint64_t>(static_cast<uint64_t>(std::max(count, 0)), file_.size() - offset_);
  offset_ += n;
  return static_cast<int>(n);
}

namespace {

using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;
using google::protobuf::io::StringOutputStream;
using google::protobuf::internal::WireFormatLite;

// Field numbers of onnx.proto walked here.
constexpr int kModelGraph = 7;        // ModelProto.graph
constexpr int kGraphInitializer = 5;  // GraphProto.initializer
constexpr int kTensorRawData = 9;     // TensorProto.raw_data

bool is_delimited(uint32_t tag, int field) {
  return WireFormatLite::GetTagFieldNumber(tag) == field &&
         WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
}

// Copies a sub-message's body (the bytes up to its limit) into `out` through
// `field`, which handles the fields of interest and returns 1 (handled),
// 0 (copy it as it is) or -1 (give up). A dry pass copies nothing: it only
// finds the payloads, reading no more of the file than the headers.
template <class Field>
bool copy_body(CodedInputStream& in, std::string& out, bool dry, Field&& field) {
  StringOutputStream stream(&out);
  CodedOutputStream writer(&stream);
  for (;;) {
    const uint32_t tag = in.ReadTag();
    if (tag == 0) return in.ConsumedEntireMessage();
    const int handled = field(tag, writer);
    if (handled < 0) return false;
    if (handled == 0 && !(dry ? WireFormatLite::SkipField(&in, tag) : WireFormatLite::SkipField(&in, tag, &writer)))
      return false;
  }
}

// Writes `body` as the length-delimited field `field`.
void write_message(CodedOutputStream& writer, int field, const std::string& body) {
  writer.WriteTag(WireFormatLite::MakeTag(field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
  writer.WriteVarint32(static_cast<uint32_t>(body.size()));
  writer.WriteRaw(body.data(), static_cast<int>(body.size()));
}

// Reads a length-delimited field's body with `body_fn` (limited to it).
template <class BodyFn>
bool read_message(CodedInputStream& in, BodyFn&& body_fn) {
  uint32_t len = 0;
  if (!in.ReadVarint32(&len) || len > static_cast<uint32_t>(INT32_MAX)) return false;
  const CodedInputStream::Limit limit = in.PushLimit(static_cast<int>(len));
  const bool ok = body_fn() && in.BytesUntilLimit() == 0;
  in.PopLimit(limit);
  return ok;
}

// One initializer (TensorProto): its large raw_data left out.
bool strip_tensor(CodedInputStream& in, const io::RegularFile& file, bool dry, std::string& out,
                  std::optional<io::FileRange>& payload) {
  bool raw_seen = false;
  return copy_body(in, out, dry, [&](uint32_t tag, CodedOutputStream& writer) -> int {
    if (!is_delimited(tag, kTensorRawData)) return 0;
    if (raw_seen) return -1;  // a repeated raw_data: protobuf keeps the last
    raw_seen = true;
    uint32_t len = 0;
    if (!in.ReadVarint32(&len)) return -1;
    const int64_t at = in.CurrentPosition();
    if (len < kStripPayloadBytes && dry) return in.Skip(static_cast<int>(len)) ? 1 : -1;
    if (len < kStripPayloadBytes) {  // small: kept in the stripped bytes
      std::string bytes;
      if (!in.ReadString(&bytes, static_cast<int>(len))) return -1;
      WireFormatLite::WriteBytes(kTensorRawData, bytes, &writer);
      return 1;
    }
    if (at < 0 || !in.Skip(static_cast<int>(len))) return -1;
    payload = io::FileRange{&file, static_cast<uint64_t>(at), len};
    return 1;
  });
}

// The main graph: each initializer stripped, the rest copied.
bool strip_graph(CodedInputStream& in, const io::RegularFile& file, bool dry, std::string& out,
                 std::vector<std::optional<io::FileRange>>& payloads) {
  return copy_body(in, out, dry, [&](uint32_t tag, CodedOutputStream& writer) -> int {
    if (!is_delimited(tag, kGraphInitializer)) return 0;
    std::string tensor;
    std::optional<io::FileRange> payload;
    if (!read_message(in, [&] { return strip_tensor(in, file, dry, tensor, payload); })) return -1;
    write_message(writer, kGraphInitializer, tensor);
    payloads.push_back(payload);
    return 1;
  });
}

// One pass over the file: dry (payloads found, nothing copied) or not.
bool strip_pass(const io::RegularFile& file, bool dry, StrippedModel& model) {
  FileChunks reader(file);
  google::protobuf::io::CopyingInputStreamAdaptor input(&reader, dry ? 1 << 13 : 1 << 20);
  CodedInputStream in(&input);
  // No total bytes limit: the reader ends at the file's size, and a limit
  // equal to it would make the end of the file read as an error.
  bool graph_seen = false;
  const bool ok = copy_body(in, model.bytes, dry, [&](uint32_t tag, CodedOutputStream& writer) -> int {
    if (!is_delimited(tag, kModelGraph)) return 0;
    if (graph_seen) return -1;  // a repeated graph: protobuf merges them
    graph_seen = true;
    std::string graph;
    if (!read_message(in, [&] { return strip_graph(in, file, dry, graph, model.payloads); })) return -1;
    if (!dry) write_message(writer, kModelGraph, graph);
    return 1;
  });
  return ok && graph_seen;
}

}  // namespace

std::optional<StrippedModel> strip_initializer_payloads(const io::RegularFile& file) {
  if (file.size() == 0 || file.size() > static_cast<uint64_t>(INT32_MAX)) return std::nullopt;
  // A dry pass first: a model without large initializers (weights kept in
  // Constant nodes) is not copied for nothing.
  StrippedModel model;
  if (!strip_pass(file, true, model)) return std::nullopt;
  bool any = false;
  for (const auto& p : model.payloads) any = any || p.has_value();
  if (!any) return std::nullopt;
  model = StrippedModel();
  if (!strip_pass(file, false, model)) return std::nullopt;
  return model;
}

}  // namespace spindle::graph
