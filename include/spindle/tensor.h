// spindle/tensor.h — dense tensors: element type, shape, strides, buffers.
//
// A Tensor is a cheap handle: copies share the buffer (like an ONNX Runtime
// OrtValue); clone() copies the data. Owned buffers are 64-byte aligned.
// A borrowed tensor points at memory the caller keeps alive (zero-copy
// feeds). Tensors made by kernels are always contiguous, row-major.
//
// String tensors (DataType::kString) hold std::string elements; their
// buffer constructs and destroys them, and dtype_size() is 0 for them so
// that kernels moving raw bytes refuse them. A Tensor can also be an ONNX
// sequence value: an ordered list of tensors of one element type
// (Tensor::sequence), or an ONNX optional value: empty or holding one tensor
// or sequence (Tensor::optional). Those have no shape or data of their own.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "spindle/status.h"

namespace spindle {

// Values follow onnx.TensorProto.DataType.
enum class DataType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kBFloat16 = 16,
};

// float16 tensors hold IEEE binary16 bit patterns (uint16_t); conversions
// round to nearest even.
float float16_to_float(uint16_t bits);
uint16_t float_to_float16(float v);
// bfloat16 tensors hold the upper 16 bits of a binary32 (uint16_t);
// float -> bfloat16 rounds to nearest even and keeps NaN a (quiet) NaN.
float bfloat16_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float v);

size_t dtype_size(DataType t);             // bytes per element; 0 for unsupported
std::string dtype_name(DataType t);        // "float32", "int64", ...
Result<DataType> dtype_from_name(const std::string& name);

template <class T>
constexpr DataType dtype_of();
template <> constexpr DataType dtype_of<float>() { return DataType::kFloat32; }
template <> constexpr DataType dtype_of<double>() { return DataType::kFloat64; }
template <> constexpr DataType dtype_of<int64_t>() { return DataType::kInt64; }
template <> constexpr DataType dtype_of<int32_t>() { return DataType::kInt32; }
template <> constexpr DataType dtype_of<int16_t>() { return DataType::kInt16; }
template <> constexpr DataType dtype_of<int8_t>() { return DataType::kInt8; }
template <> constexpr DataType dtype_of<uint8_t>() { return DataType::kUInt8; }
template <> constexpr DataType dtype_of<uint16_t>() { return DataType::kUInt16; }
template <> constexpr DataType dtype_of<uint32_t>() { return DataType::kUInt32; }
template <> constexpr DataType dtype_of<uint64_t>() { return DataType::kUInt64; }
template <> constexpr DataType dtype_of<bool>() { return DataType::kBool; }
template <> constexpr DataType dtype_of<std::string>() { return DataType::kString; }

using Shape = std::vector<int64_t>;
// Element count of a shape (1 for a scalar). Throws spindle::Error
// (INVALID_ARGUMENT) naming the shape when a dimension is negative or the
// product does not fit in int64: shapes come from untrusted models and inputs.
int64_t shape_numel(std::span<const int64_t> shape);
// The same without throwing: nullopt on a negative dimension or overflow.
std::optional<int64_t> checked_numel(std::span<const int64_t> shape);
// a * b for sizes (a, b >= 0): nullopt on overflow.
std::optional<int64_t> checked_mul(int64_t a, int64_t b);
// Bytes of `numel` elements of `elem_size` bytes; throws spindle::Error
// (RESOURCE_EXHAUSTED) when that does not fit in int64 / size_t.
size_t checked_nbytes(int64_t numel, size_t elem_size);
std::string shape_to_string(std::span<const int64_t> shape);  // "1x3x224x224", "scalar"
Shape contiguous_strides(std::span<const int64_t> shape);     // in elements

inline constexpr size_t kTensorAlignment = 64;

// Memory budget of one run (session.max_tensor_bytes, session.max_run_bytes):
// while a MemoryBudget::Scope is active on a thread, every buffer allocated
// there counts against the budget until it is freed, and an allocation past
// a limit throws spindle::Error (RESOURCE_EXHAUSTED) naming the size and the
// limit. 0 = no limit.
class MemoryBudget {
 public:
  MemoryBudget(size_t max_tensor_bytes, size_t max_live_bytes)
      : max_tensor_bytes_(max_tensor_bytes), max_live_bytes_(max_live_bytes) {}
  void acquire(size_t bytes);  // throws past a limit
  void release(size_t bytes) { live_.fetch_sub(bytes, std::memory_order_relaxed); }
  size_t live_bytes() const { return live_.load(std::memory_order_relaxed); }

  // Makes `budget` (may be null: none) the calling thread's budget until the
  // scope ends.
  class Scope {
   public:
    explicit Scope(const std::shared_ptr<MemoryBudget>* budget);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    const std::shared_ptr<MemoryBudget>* previous_;
  };

 private:
  size_t max_tensor_bytes_, max_live_bytes_;
  std::atomic<size_t> live_{0};
};

// A reference-counted byte buffer (owned, aligned) or a borrowed pointer.
class Buffer {
 public:
  static std::shared_ptr<Buffer> allocate(size_t bytes);
  static std::shared_ptr<Buffer> borrow(void* data, size_t bytes);
  // An owned buffer of `count` empty std::string objects (string tensors).
  static std::shared_ptr<Buffer> allocate_strings(size_t count);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() const { return data_; }
  size_t size() const { return size_; }
  bool owned() const { return owned_; }
  bool holds_strings() const { return strings_ != 0; }

 private:
  Buffer(void* data, size_t size, bool owned) : data_(data), size_(size), owned_(owned) {}
  void* data_;
  size_t size_;
  bool owned_;
  size_t strings_ = 0;  // std::string objects constructed in data_
  std::shared_ptr<MemoryBudget> budget_;  // charged with size_ while this buffer lives
};

class Tensor {
 public:
  Tensor() = default;
  // Allocates a zero-filled contiguous tensor.
  Tensor(DataType dtype, Shape shape);
  // A tensor over an existing buffer (shared, not copied).
  Tensor(DataType dtype, Shape shape, std::shared_ptr<Buffer> buffer, size_t byte_offset = 0);
  // Borrows memory the caller keeps alive for the tensor's lifetime.
  static Tensor borrow(DataType dtype, Shape shape, void* data);
  // A contiguous tensor holding a copy of `values`.
  template <class T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values);
  template <class T>
  static Tensor scalar(T v) { return from_vector<T>({}, {v}); }
  // A sequence value holding `items` (each a tensor of `elem_type`; checked).
  static Tensor sequence(DataType elem_type, std::vector<Tensor> items);
  // An optional value: empty (`value` undefined; `of_sequence` says whether
  // it would hold a sequence of `elem_type` tensors or one such tensor), or
  // holding `value` (a tensor or a sequence).
  static Tensor optional(DataType elem_type, bool of_sequence, const Tensor& value);
  static Tensor optional(DataType elem_type, bool of_sequence);  // empty

  bool defined() const { return dtype_ != DataType::kUndefined; }
  bool is_tensor() const { return items_ == nullptr; }
  bool is_sequence() const { return items_ != nullptr && !optional_; }
  bool is_optional() const { return optional_; }
  // The tensors of a sequence value; throws when this is not a sequence.
  const std::vector<Tensor>& sequence_items() const;
  // An optional value's content: null when empty; throws when this is not
  // an optional. optional_of_sequence(): what it holds or would hold.
  const Tensor* optional_value() const;
  bool optional_of_sequence() const { return optional_sequence_; }
  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int64_t dim(int64_t i) const { return shape_[static_cast<size_t>(i < 0 ? i + rank() : i)]; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return checked_nbytes(numel(), dtype_size(dtype_)); }
  bool is_contiguous() const { return strides_ == contiguous_strides(shape_); }

  const void* raw_data() const { return static_cast<const char*>(buffer_ ? buffer_->data() : nullptr) + offset_; }
  void* raw_mutable_data() { return static_cast<char*>(buffer_ ? buffer_->data() : nullptr) + offset_; }
  // Typed access; throws Error(kInvalidArgument) when T does not match dtype().
  template <class T>
  const T* data() const {
    check_type(dtype_of<T>());
    return static_cast<const T*>(raw_data());
  }
  template <class T>
  T* mutable_data() {
    check_type(dtype_of<T>());
    return static_cast<T*>(raw_mutable_data());
  }
  template <class T>
  std::vector<T> to_vector() const {
    const T* p = data<T>();
    return std::vector<T>(p, p + numel());
  }
  // Any integer tensor's values as int64 (shape inputs, axes, indices).
  std::vector<int64_t> to_int64_vector() const;

  // Same buffer, new shape (same numel, contiguous); throws on mismatch.
  Tensor reshaped(Shape shape) const;
  Tensor clone() const;
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }
  std::string describe() const;  // "float32 1x3x224x224"

 private:
  void check_type(DataType expected) const;
  DataType dtype_ = DataType::kUndefined;
  Shape shape_;
  Shape strides_;
  std::shared_ptr<Buffer> buffer_;
  size_t offset_ = 0;
  std::shared_ptr<const std::vector<Tensor>> items_;  // sequence items, or an optional's 0 or 1 value
  bool optional_ = false;
  bool optional_sequence_ = false;
};

template <class T>
Tensor Tensor::from_vector(Shape shape, const std::vector<T>& values) {
  Tensor t(dtype_of<T>(), std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.numel())
    throw Error(StatusCode::kInvalidArgument, "Tensor::from_vector: " + std::to_string(values.size()) +
                                                  " values for shape " + shape_to_string(t.shape()));
  T* out = t.template mutable_data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

}  // namespace spindle
