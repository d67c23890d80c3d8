// tensor_proto.h — ONNX protobuf tensors to spindle tensors: TensorProto
// (raw_data, the typed *_data fields or external data), and the
// SequenceProto / OptionalProto files of the ONNX backend test data.
//
// The io layer: below the graph (whose loader reads initializers and tensor
// attributes through it) and beside the .npy reader (spindle/io.h, which
// reads .pb files through it). Every size comes from an untrusted file and is
// checked against what the file holds before anything is allocated; external
// data stays inside base_dir.
#pragma once

#include <cstdint>
#include <filesystem>

#include <onnx/onnx_pb.h>

#include "spindle/status.h"
#include "spindle/tensor.h"

namespace spindle::io {

class RegularFile;

// Bytes of an opened file: a TensorProto's raw_data read from the model file
// rather than from the parsed message (graph/model_stream.h).
struct FileRange {
  const RegularFile* file = nullptr;
  uint64_t offset = 0;
  size_t size = 0;
};

// Element type of an onnx elem_type; kUnsupported for types spindle lacks.
Result<DataType> dtype_from_onnx(int32_t elem_type);
// A TensorProto's value: raw_data, the typed *_data fields, or external data
// (`location` relative to base_dir, with optional offset and length).
Result<Tensor> tensor_from_proto(const onnx::TensorProto& proto, const std::filesystem::path& base_dir = {});
// The same, with raw_data (absent from `proto`) read from `raw_data`.
Result<Tensor> tensor_from_proto(const onnx::TensorProto& proto, const std::filesystem::path& base_dir,
                                 const FileRange* raw_data);
// A serialized TensorProto file (.pb), as in the ONNX backend test data.
Result<Tensor> read_tensor_pb(const std::filesystem::path& path);
// A test-data file of a graph input or output of type `type`: a
// SequenceProto for sequence types, an OptionalProto for optional types,
// else a TensorProto.
Result<Tensor> read_value_pb(const std::filesystem::path& path, const onnx::TypeProto& type);
// A uint16 tensor given for a value declared bfloat16 (ONNX element type
// `declared_elem_type`) holds its bits: ONNX up to 1.13 wrote bfloat16 test
// data as UINT16 TensorProtos, and numpy without ml_dtypes has only uint16.
// The same buffer, as bfloat16; any other tensor is returned as it is.
Tensor as_declared_bfloat16(Tensor t, int32_t declared_elem_type);

}  // namespace spindle::io
