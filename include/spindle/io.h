// spindle/io.h — tensors in files: NumPy .npy files (format 1.0-3.0,
// little-endian, C order) and the tensor files the command-line tool accepts
// (.npy, or a serialized onnx TensorProto / SequenceProto / OptionalProto .pb
// as in the ONNX backend test data).
//
// Files are untrusted: sizes in headers are checked against the file before
// anything is allocated, and a bad file is an error naming it, never a crash.
// String tensors are written as numpy's unicode dtype ('<U<n>').
//
// Errors are returned (Result / Status), not thrown. Thread-safety: every
// function may be called from any thread; they share no state.
#pragma once

#include <filesystem>

#include "spindle/status.h"
#include "spindle/tensor.h"
#include "spindle/tensor_info.h"

namespace spindle::io {

Result<Tensor> read_npy(const std::filesystem::path& path);
Status write_npy(const std::filesystem::path& path, const Tensor& tensor);
// .npy or .pb by extension; anything else is an error naming the file.
Result<Tensor> read_tensor_file(const std::filesystem::path& path);
// A value for a model input of the kind `info` describes: a .pb file holds a
// SequenceProto for a sequence input, an OptionalProto for an optional one,
// else a TensorProto; a .npy file holds a tensor (numeric, bool or numpy
// unicode strings).
Result<Tensor> read_value_file(const std::filesystem::path& path, const TensorInfo& info);

}  // namespace spindle::io
