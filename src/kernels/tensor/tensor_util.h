// tensor_util.h — helpers shared by the kernels of src/kernels/tensor (shape
// and data-movement ops): axis normalization, integer-input reading, element
// copies by element size, parallel copy costs and the registration entry
// point of each file.
//
// Data movement is dtype-agnostic: elements are moved by their byte size
// (memcpy, or a fixed-width integer type of that size in strided loops), so
// every dtype with a nonzero dtype_size() is supported; string tensors are
// rejected with kUnsupported.
//
// Determinism: parallel loops split outer rows only; every output byte is
// written by exactly one block, so results never depend on the thread count.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/kernel.h"

namespace spindle::kernels::tensor {

// Bytes per element of input `name`; kUnsupported for strings and unknown types.
inline size_t elem_size(const NodeInfo& node, const Tensor& t, const char* name) {
  const size_t es = dtype_size(t.dtype());
  if (es == 0) fail_unsupported(node, fmt::format("input {} is {}, which is not supported", name, t.describe()));
  return es;
}

// For ops that only relabel a tensor (views: Identity, Reshape, Squeeze...):
// every element type, strings included.
inline void check_viewable(const NodeInfo& node, const Tensor& t, const char* name) {
  if (t.dtype() != DataType::kString) elem_size(node, t, name);
}

inline bool is_integer_dtype(DataType t) {
  switch (t) {
    case DataType::kInt8: case DataType::kInt16: case DataType::kInt32: case DataType::kInt64:
    case DataType::kUInt8: case DataType::kUInt16: case DataType::kUInt32: case DataType::kUInt64:
      return true;
    default:
      return false;
  }
}

// The values of an integer input (shape, axes, pads, indices...).
inline std::vector<int64_t> read_ints(const NodeInfo& node, const Tensor& t, const char* name) {
  if (!is_integer_dtype(t.dtype()))
    fail(node, fmt::format("input {} is {}, expected an integer tensor", name, t.describe()));
  return t.to_int64_vector();
}

// Same, additionally requiring rank <= 1.
inline std::vector<int64_t> read_int_list(const NodeInfo& node, const Tensor& t, const char* name) {
  if (t.rank() > 1) fail(node, fmt::format("input {} is {}, expected a 1-D tensor", name, t.describe()));
  return read_ints(node, t, name);
}

// A single integer (a scalar or a 1-element tensor).
inline int64_t read_int_scalar(const NodeInfo& node, const Tensor& t, const char* name) {
  if (t.numel() != 1) fail(node, fmt::format("input {} is {}, expected a single value", name, t.describe()));
  return read_ints(node, t, name)[0];
}

// Product of dims [begin, end) of a tensor's shape. Part of a shape can
// overflow even when the whole does not (another dim is 0): that throws.
inline int64_t prod(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < s.size(); ++i)
    if (s[i] < 0 || __builtin_mul_overflow(p, s[i], &p))
      throw Error(StatusCode::kInvalidArgument,
                  fmt::format("dims {}..{} of shape {} multiply past a 64-bit size", begin, end, shape_to_string(s)));
  return p;
}

// Per-iteration cost of a loop that copies `bytes` per iteration.
inline Cost copy_cost(double bytes) { return Cost{bytes, bytes, 0.0}; }

// Calls f(T{}) with T an unsigned integer type of `size` bytes (1, 2, 4, 8);
// other sizes are not produced by dtype_size().
template <class F>
inline void with_elem_type(size_t size, F&& f) {
  switch (size) {
    case 1: f(uint8_t{}); break;
    case 2: f(uint16_t{}); break;
    case 4: f(uint32_t{}); break;
    case 8: f(uint64_t{}); break;
    default: throw Error(StatusCode::kInternal, fmt::format("unexpected element size {}", size));
  }
}

// Numeric tensor values as doubles (indices / depth of OneHot, Range
// scalars, pad values); throws for bool / string / float16.
inline std::vector<double> read_doubles(const NodeInfo& node, const Tensor& t, const char* name) {
  const int64_t n = t.numel();
  std::vector<double> v(static_cast<size_t>(n));
  auto conv = [&](auto tag) {
    using T = decltype(tag);
    const T* p = static_cast<const T*>(t.raw_data());
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<double>(p[i]);
  };
  switch (t.dtype()) {
    case DataType::kFloat32: conv(float{}); break;
    case DataType::kFloat64: conv(double{}); break;
    case DataType::kInt8: conv(int8_t{}); break;
    case DataType::kInt16: conv(int16_t{}); break;
    case DataType::kInt32: conv(int32_t{}); break;
    case DataType::kInt64: conv(int64_t{}); break;
    case DataType::kUInt8: conv(uint8_t{}); break;
    case DataType::kUInt16: conv(uint16_t{}); break;
    case DataType::kUInt32: conv(uint32_t{}); break;
    case DataType::kUInt64: conv(uint64_t{}); break;
    default: fail(node, fmt::format("input {} is {}, expected a numeric tensor", name, t.describe()));
  }
  return v;
}

// The bytes of `value` stored as one element of `dtype` (float16 rounded to
// nearest even; bool is value != 0). kUnsupported for strings.
std::vector<unsigned char> value_bytes(const NodeInfo& node, DataType dtype, double value);

// Fills n elements of es bytes at dst with the element `pattern`.
inline void fill_elements(void* dst, int64_t n, const unsigned char* pattern, size_t es) {
  with_elem_type(es, [&](auto tag) {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, pattern, sizeof(T));
    std::fill(static_cast<T*>(dst), static_cast<T*>(dst) + n, v);
  });
}

// Shape of `shape` as "[2, 3]" for messages (shape_to_string prints "2x3").
inline std::string dims_string(const std::vector<int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

// Copies a strided view of `src` into the contiguous `dst`: output element
// (i0, ..., in-1) of `dims` is read from src + sum(ik * in_strides[k])
// elements (strides may be 0 for broadcasting or negative for reversed
// slices; `src` points at the element of output index 0). Dims are
// coalesced first; then contiguous runs are memcpy'd, broadcast runs filled,
// and a transposition whose input-contiguous dim is not last is done in
// cache tiles. Parallel over output rows / tiles (strided_copy.cpp).
void strided_copy(ThreadPool* pool, const void* src, const Shape& dims, const std::vector<int64_t>& in_strides,
                  size_t elem_size, void* dst);

// One input of a row-wise copy: for each outer row r, `bytes` bytes are
// copied from src + r * src_stride to dst + r * dst_stride (strides in bytes).
struct RowPart {
  const char* src;
  int64_t src_stride;
  char* dst;
  int64_t dst_stride;
  int64_t bytes;
};
// Runs every part for every row in [0, outer), in parallel over rows (and
// over fixed chunks of the parts when there are few rows). Concat and Split.
void copy_row_parts(ThreadPool* pool, int64_t outer, const std::vector<RowPart>& parts);

// Writes the transposition of `x` read as `view_shape` (same numel) by
// `perm` into the contiguous `dst` (Transpose, DepthToSpace, SpaceToDepth).
void permute_copy(ThreadPool* pool, const Tensor& x, const Shape& view_shape, const std::vector<int64_t>& perm,
                  void* dst);

// Registration entry points (one per file).
void register_basic(KernelRegistry& r);      // basic.cpp: Constant, Identity, Reshape, Squeeze,
                                             //   Unsqueeze, Shape, Size, Flatten
void register_transpose(KernelRegistry& r);  // transpose.cpp: Transpose, DepthToSpace, SpaceToDepth
void register_concat(KernelRegistry& r);     // concat.cpp: Concat, Split
void register_slice(KernelRegistry& r);      // slice.cpp: Slice
void register_gather(KernelRegistry& r);     // gather.cpp: Gather, GatherElements, GatherND, ScatterND
void register_expand(KernelRegistry& r);     // expand.cpp: Expand, Tile, Pad
void register_generate(KernelRegistry& r);   // generate.cpp: ConstantOfShape, Range, NonZero, Trilu,
                                             //   EyeLike, OneHot
void register_select(KernelRegistry& r);     // select.cpp: TopK, ScatterElements, Scatter, Compress,
                                             //   ReverseSequence
void register_sequence(KernelRegistry& r);   // sequence.cpp: Sequence*, SplitToSequence, ConcatFromSequence, Optional*
void register_unique(KernelRegistry& r);     // unique.cpp: Unique
void register_random(KernelRegistry& r);     // random.cpp: RandomNormal, RandomUniform, RandomNormalLike,
                                             //   RandomUniformLike, Bernoulli, Multinomial, Dropout

}  // namespace spindle::kernels::tensor
