// tensor.cpp — see spindle/tensor.h.
#include "spindle/tensor.h"

#include <unistd.h>

#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <new>

#include <Eigen/Core>  // Eigen::half: binary16 conversions
#include <fmt/format.h>

#include "common/buffer_cache.h"

namespace spindle {

float float16_to_float(uint16_t bits) {
  return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(bits));
}

uint16_t float_to_float16(float v) { return Eigen::numext::bit_cast<uint16_t>(Eigen::half(v)); }

float bfloat16_to_float(uint16_t bits) {
  uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

uint16_t float_to_bfloat16(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  // NaN stays NaN (quiet, sign kept): truncating could clear every mantissa
  // bit left and turn it into an infinity, and rounding could carry into it.
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  // Round to nearest, ties to even: add 0x7fff plus the lowest kept bit.
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

size_t dtype_size(DataType t) {
  switch (t) {
    case DataType::kFloat32: case DataType::kInt32: case DataType::kUInt32: return 4;
    case DataType::kFloat64: case DataType::kInt64: case DataType::kUInt64: return 8;
    case DataType::kInt16: case DataType::kUInt16: case DataType::kFloat16: case DataType::kBFloat16: return 2;
    case DataType::kInt8: case DataType::kUInt8: case DataType::kBool: return 1;
    default: return 0;
  }
}

std::string dtype_name(DataType t) {
  switch (t) {
    case DataType::kFloat32: return "float32";
    case DataType::kFloat64: return "float64";
    case DataType::kFloat16: return "float16";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kInt64: return "int64";
    case DataType::kInt32: return "int32";
    case DataType::kInt16: return "int16";
    case DataType::kInt8: return "int8";
    case DataType::kUInt64: return "uint64";
    case DataType::kUInt32: return "uint32";
    case DataType::kUInt16: return "uint16";
    case DataType::kUInt8: return "uint8";
    case DataType::kBool: return "bool";
    case DataType::kString: return "string";
    default: return fmt::format("dtype({})", static_cast<int>(t));
  }
}

Result<DataType> dtype_from_name(const std::string& name) {
  for (int i = 1; i <= 16; ++i) {
    auto t = static_cast<DataType>(i);
    if (dtype_name(t) == name) return t;
  }
  return invalid_argument(fmt::format("unknown element type '{}' (expected float32, int64, int32, bool, ...)", name));
}

std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<int64_t> checked_numel(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return std::nullopt;
  }
  return n;
}

int64_t shape_numel(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      throw Error(StatusCode::kInvalidArgument,
                  fmt::format("shape [{}] has a negative dimension", fmt::join(shape, ", ")));
    if (__builtin_mul_overflow(n, d, &n))
      throw Error(StatusCode::kInvalidArgument,
                  fmt::format("shape [{}] has more elements than fit in a 64-bit count", fmt::join(shape, ", ")));
  }
  return n;
}

size_t checked_nbytes(int64_t numel, size_t elem_size) {
  int64_t bytes = 0;
  if (numel < 0 || __builtin_mul_overflow(numel, static_cast<int64_t>(elem_size), &bytes))
    throw Error(StatusCode::kResourceExhausted,
                fmt::format("{} elements of {} bytes do not fit in memory", numel, elem_size));
  return static_cast<size_t>(bytes);
}

std::string shape_to_string(std::span<const int64_t> shape) {
  if (shape.empty()) return "scalar";
  return fmt::format("{}", fmt::join(shape, "x"));
}

Shape contiguous_strides(std::span<const int64_t> shape) {
  Shape s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    // Saturates instead of overflowing: a shape this large is refused by
    // shape_numel before any stride is used.
    if (__builtin_mul_overflow(acc, std::max<int64_t>(shape[i], 1), &acc)) acc = INT64_MAX;
  }
  return s;
}

namespace {
thread_local const std::shared_ptr<MemoryBudget>* current_budget = nullptr;
}  // namespace

void MemoryBudget::acquire(size_t bytes) {
  if (max_tensor_bytes_ && bytes > max_tensor_bytes_)
    throw Error(StatusCode::kResourceExhausted,
                fmt::format("a tensor of {} bytes exceeds the limit of {} bytes per tensor (session.max_tensor_bytes)", bytes,
                            max_tensor_bytes_));
  const size_t live = live_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (max_live_bytes_ && live > max_live_bytes_) {
    live_.fetch_sub(bytes, std::memory_order_relaxed);
    throw Error(StatusCode::kResourceExhausted,
                fmt::format("allocating {} bytes would bring the run's tensors to {} bytes, over the limit of {} bytes per "
                            "run (session.max_run_bytes)",
                            bytes, live, max_live_bytes_));
  }
}

MemoryBudget::Scope::Scope(const std::shared_ptr<MemoryBudget>* budget) : previous_(current_budget) {
  current_budget = budget;
}
MemoryBudget::Scope::~Scope() { current_budget = previous_; }

namespace {

// The machine's physical memory in bytes (0 when unknown). A buffer larger
// than that cannot be backed, so it is refused before asking the allocator
// (which may overcommit, or abort under AddressSanitizer).
size_t physical_memory() {
  static const size_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : size_t{0};
  }();
  return bytes;
}

}  // namespace

std::shared_ptr<Buffer> Buffer::allocate(size_t bytes) {
  std::shared_ptr<MemoryBudget> budget = current_budget ? *current_budget : nullptr;
  if (budget) budget->acquire(bytes);  // names the session's limit when past it
  const size_t memory = physical_memory();
  if (memory != 0 && bytes > memory) {
    if (budget) budget->release(bytes);
    throw Error(StatusCode::kResourceExhausted,
                fmt::format("a tensor of {} bytes is larger than this machine's {} bytes of memory", bytes, memory));
  }
  const size_t capacity = buffer_capacity(bytes);
  void* p = capacity == 0 ? nullptr : take_cached_buffer(capacity);
  if (!p && capacity != 0) p = std::aligned_alloc(kTensorAlignment, capacity);
  if (!p) {
    if (budget) budget->release(bytes);
    throw Error(StatusCode::kResourceExhausted, fmt::format("out of memory allocating a tensor of {} bytes", bytes));
  }
  std::shared_ptr<Buffer> b(new Buffer(p, bytes, true));
  b->budget_ = std::move(budget);
  return b;
}

std::shared_ptr<Buffer> Buffer::borrow(void* data, size_t bytes) {
  return std::shared_ptr<Buffer>(new Buffer(data, bytes, false));
}

std::shared_ptr<Buffer> Buffer::allocate_strings(size_t count) {
  std::shared_ptr<Buffer> b = allocate(checked_nbytes(static_cast<int64_t>(count), sizeof(std::string)));
  auto* p = static_cast<std::string*>(b->data_);
  for (size_t i = 0; i < count; ++i) new (p + i) std::string();
  b->strings_ = count;
  return b;
}

Buffer::~Buffer() {
  auto* p = static_cast<std::string*>(data_);
  for (size_t i = 0; i < strings_; ++i) p[i].~basic_string();
  if (owned_) give_cached_buffer(data_, buffer_capacity(size_));
  if (budget_) budget_->release(size_);
}

Tensor::Tensor(DataType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  for (int64_t d : shape_)
    if (d < 0) throw Error(StatusCode::kInvalidArgument, "tensor shape " + shape_to_string(shape_) + " has a negative dimension");
  strides_ = contiguous_strides(shape_);
  if (dtype_ == DataType::kString) {
    buffer_ = Buffer::allocate_strings(static_cast<size_t>(numel()));
    return;
  }
  const size_t bytes = nbytes();
  buffer_ = Buffer::allocate(bytes);
  std::memset(buffer_->data(), 0, bytes);
}

Tensor::Tensor(DataType dtype, Shape shape, std::shared_ptr<Buffer> buffer, size_t byte_offset)
    : dtype_(dtype), shape_(std::move(shape)), buffer_(std::move(buffer)), offset_(byte_offset) {
  strides_ = contiguous_strides(shape_);
  const size_t bytes =
      dtype_ == DataType::kString ? static_cast<size_t>(numel()) * sizeof(std::string) : nbytes();
  if (buffer_ && offset_ + bytes > buffer_->size())
    throw Error(StatusCode::kInvalidArgument,
                fmt::format("tensor {} needs {} bytes but its buffer holds {}", describe(), nbytes(), buffer_->size() - offset_));
}

Tensor Tensor::borrow(DataType dtype, Shape shape, void* data) {
  if (dtype == DataType::kString)
    throw Error(StatusCode::kInvalidArgument, "string tensors cannot borrow memory; build them with Tensor(kString, shape)");
  const size_t bytes = static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype);
  return Tensor(dtype, std::move(shape), Buffer::borrow(data, bytes));
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  if (items_) throw Error(StatusCode::kInvalidArgument, "expected an integer tensor, got the " + describe());
  std::vector<int64_t> out(static_cast<size_t>(numel()));
  const void* p = raw_data();
  switch (dtype_) {
    case DataType::kInt64: for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<const int64_t*>(p)[i]; break;
    case DataType::kInt32: for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<const int32_t*>(p)[i]; break;
    case DataType::kInt16: for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<const int16_t*>(p)[i]; break;
    case DataType::kInt8: for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<const int8_t*>(p)[i]; break;
    case DataType::kUInt8: for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<const uint8_t*>(p)[i]; break;
    case DataType::kUInt32: for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<const uint32_t*>(p)[i]; break;
    case DataType::kUInt64: for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int64_t>(static_cast<const uint64_t*>(p)[i]); break;
    case DataType::kBool: for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<const bool*>(p)[i]; break;
    default:
      throw Error(StatusCode::kInvalidArgument, "expected an integer tensor, got " + describe());
  }
  return out;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (items_) throw Error(StatusCode::kInvalidArgument, "cannot reshape the " + describe());
  if (shape_numel(shape) != numel())
    throw Error(StatusCode::kInvalidArgument,
                fmt::format("cannot reshape {} to {}: element counts differ", describe(), shape_to_string(shape)));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  t.strides_ = contiguous_strides(t.shape_);
  return t;
}

Tensor Tensor::sequence(DataType elem_type, std::vector<Tensor> items) {
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].is_sequence() || items[i].dtype() != elem_type)
      throw Error(StatusCode::kInvalidArgument,
                  fmt::format("sequence of {}: item {} is {}", dtype_name(elem_type), i, items[i].describe()));
  Tensor t;
  t.dtype_ = elem_type;
  t.items_ = std::make_shared<const std::vector<Tensor>>(std::move(items));
  return t;
}

const std::vector<Tensor>& Tensor::sequence_items() const {
  if (!is_sequence()) throw Error(StatusCode::kInvalidArgument, "expected a sequence value, got the " + describe());
  return *items_;
}

Tensor Tensor::optional(DataType elem_type, bool of_sequence, const Tensor& value) {
  if (value.defined() && (value.is_optional() || value.is_sequence() != of_sequence || value.dtype() != elem_type))
    throw Error(StatusCode::kInvalidArgument,
                fmt::format("an optional {} of {} cannot hold the {}", of_sequence ? "sequence" : "tensor",
                            dtype_name(elem_type), value.describe()));
  Tensor t;
  t.dtype_ = elem_type;
  t.optional_ = true;
  t.optional_sequence_ = of_sequence;
  t.items_ = std::make_shared<const std::vector<Tensor>>(value.defined() ? std::vector<Tensor>{value} : std::vector<Tensor>{});
  return t;
}

Tensor Tensor::optional(DataType elem_type, bool of_sequence) { return optional(elem_type, of_sequence, Tensor()); }

const Tensor* Tensor::optional_value() const {
  if (!optional_) throw Error(StatusCode::kInvalidArgument, "expected an optional value, got the " + describe());
  return items_->empty() ? nullptr : &(*items_)[0];
}

Tensor Tensor::clone() const {
  if (is_optional()) {
    const Tensor* v = optional_value();
    return optional(dtype_, optional_sequence_, v ? v->clone() : Tensor());
  }
  if (is_sequence()) {
    std::vector<Tensor> items;
    for (const Tensor& t : *items_) items.push_back(t.clone());
    return sequence(dtype_, std::move(items));
  }
  Tensor t(dtype_, shape_);
  if (dtype_ == DataType::kString) {
    std::copy_n(data<std::string>(), numel(), t.mutable_data<std::string>());
    return t;
  }
  if (nbytes()) std::memcpy(t.raw_mutable_data(), raw_data(), nbytes());
  return t;
}

std::string Tensor::describe() const {
  if (is_optional()) {
    const Tensor* v = optional_value();
    return v ? "optional holding the " + v->describe()
             : fmt::format("empty optional ({} of {})", optional_sequence_ ? "sequence" : "tensor", dtype_name(dtype_));
  }
  if (is_sequence()) return fmt::format("sequence of {} {} tensor(s)", items_->size(), dtype_name(dtype_));
  return dtype_name(dtype_) + " " + shape_to_string(shape_);
}

void Tensor::check_type(DataType expected) const {
  if (items_) throw Error(StatusCode::kInvalidArgument, "expected a tensor, got the " + describe());
  if (dtype_ != expected)
    throw Error(StatusCode::kInvalidArgument,
                fmt::format("tensor is {}, accessed as {}", describe(), dtype_name(expected)));
}

}  // namespace spindle
