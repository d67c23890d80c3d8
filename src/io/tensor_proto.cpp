// tensor_proto.cpp — see tensor_proto.h.
#include "io/tensor_proto.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>

#include <fmt/format.h>
#include <onnx/onnx-data_pb.h>

#include "io/external_memory.h"
#include "io/regular_file.h"

namespace spindle::io {

Result<DataType> dtype_from_onnx(int32_t elem_type) {
  auto t = static_cast<DataType>(elem_type);
  if ((elem_type >= 1 && elem_type <= 13) || elem_type == 16) return t;
  return unsupported(fmt::format("element type {} ({}) is not supported (expected a numeric, bool or string type; float8, 4-bit and complex types are not)", elem_type,
                                 onnx::TensorProto_DataType_Name(elem_type)));
}

namespace {

template <class Dst, class Src>
void copy_field(Tensor& t, const Src& field) {
  Dst* out = static_cast<Dst*>(t.raw_mutable_data());
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<Dst>(field.Get(i));
}

// A non-negative integer written in decimal (external data offset/length).
Result<int64_t> parse_size(const std::string& text, const std::string& what) {
  int64_t v = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0)
    return invalid_argument(fmt::format("{} is '{}', expected a non-negative integer below 2^63", what, text));
  return v;
}

// Where a tensor's external data lies: a regular file inside base_dir (after
// resolving `..` and symlinks), and a byte range checked against its size.
thread_local const ExternalFiles* t_external_files = nullptr;

struct ExternalRange {
  std::optional<RegularFile> file;  // unset when the bytes are held in memory
  int64_t offset = 0;
  std::span<const uint8_t> memory;
};

// The byte range [offset, offset + expected) checked against a file of `size`
// bytes and the declared length.
Status check_range(const std::string& name, const std::string& file, uintmax_t size, int64_t offset, int64_t length,
                   size_t expected) {
  if (length >= 0 && static_cast<uint64_t>(length) != expected)
    return invalid_argument(fmt::format("tensor '{}': external data length {} does not match the {} bytes its shape needs",
                                        name, length, expected));
  if (static_cast<uintmax_t>(offset) > size || expected > size - static_cast<uintmax_t>(offset))
    return invalid_argument(fmt::format("tensor '{}': external data file {} holds {} bytes, fewer than offset {} + {} bytes",
                                        name, file, size, offset, expected));
  return Status::ok();
}

// A location among the files held in memory: matched after lexical
// normalisation ("./w.bin" is "w.bin"); an absolute one, or one that climbs
// out of the model's directory ("../w.bin"), never matches.
const std::span<const uint8_t>* in_memory(const ExternalFiles& memory, const std::filesystem::path& rel) {
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory()) return nullptr;
  const std::string wanted = rel.lexically_normal().generic_string();
  if (wanted.empty() || wanted.starts_with("..")) return nullptr;
  for (const auto& [name, bytes] : memory)
    if (std::filesystem::path(name).lexically_normal().generic_string() == wanted) return &bytes;
  return nullptr;
}

Result<ExternalRange> locate_external(const onnx::TensorProto& proto, const std::string& name,
                                      const std::filesystem::path& base_dir, size_t expected) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : proto.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset") {
      SPINDLE_ASSIGN_OR_RETURN(offset, parse_size(kv.value(), fmt::format("tensor '{}': external data offset", name)));
    } else if (kv.key() == "length") {
      SPINDLE_ASSIGN_OR_RETURN(length, parse_size(kv.value(), fmt::format("tensor '{}': external data length", name)));
    }
  }
  if (location.empty()) return invalid_argument(fmt::format("tensor '{}': external data without a location", name));
  const std::filesystem::path rel(location);
  if (const ExternalFiles* memory = t_external_files) {
    const std::span<const uint8_t>* bytes = in_memory(*memory, rel);
    if (!bytes)
      return not_found(fmt::format("tensor '{}': external data file '{}' is not among the {} file(s) given in memory",
                                   name, location, memory->size()));
    SPINDLE_RETURN_IF_ERROR(check_range(name, "'" + location + "' (in memory)", bytes->size(), offset, length, expected));
    ExternalRange range;
    range.offset = offset;
    range.memory = *bytes;
    return range;
  }
  if (base_dir.empty())
    return invalid_argument(fmt::format("tensor '{}' keeps its data in the external file '{}', but the model was given as "
                                        "bytes without a directory to read it from (set the session config entry {})",
                                        name, location, "session.model_external_initializers_file_folder_path"));
  if (rel.is_absolute() || rel.has_root_name() || rel.has_root_directory())
    return invalid_argument(fmt::format("tensor '{}': external data location '{}' is an absolute path; expected a path "
                                        "relative to the model's directory",
                                        name, location));
  std::error_code ec;
  const std::filesystem::path root = std::filesystem::weakly_canonical(std::filesystem::absolute(base_dir, ec), ec);
  const std::filesystem::path file = std::filesystem::canonical(root / rel, ec);
  if (ec)
    return not_found(fmt::format("tensor '{}': external data file '{}' does not exist in {}", name, location, root.string()));
  const auto [r, f] = std::mismatch(root.begin(), root.end(), file.begin(), file.end());
  if (r != root.end())
    return invalid_argument(fmt::format("tensor '{}': external data location '{}' resolves to {}, outside the model's "
                                        "directory {}",
                                        name, location, file.string(), root.string()));
  // Checked on the opened file (not the path), which is the one read.
  auto opened = RegularFile::open(file, fmt::format("tensor '{}': external data file", name));
  if (!opened.is_ok()) {
    if (opened.status().code() == StatusCode::kInvalidArgument)
      return invalid_argument(fmt::format("tensor '{}': external data location '{}' is not a regular file", name, location));
    return opened.status();
  }
  SPINDLE_RETURN_IF_ERROR(check_range(name, file.string(), opened->size(), offset, length, expected));
  ExternalRange range;
  range.file = std::move(opened).value();
  range.offset = offset;
  return range;
}

// A contiguous tensor whose bytes the caller writes next (not zeroed first).
Tensor uninitialized(DataType dtype, Shape shape, size_t bytes) {
  return Tensor(dtype, std::move(shape), Buffer::allocate(bytes));
}

Status read_external(const ExternalRange& range, void* dst, size_t bytes) {
  if (!range.file) {
    if (bytes) std::memcpy(dst, range.memory.data() + range.offset, bytes);
    return Status::ok();
  }
  return range.file->read_at(static_cast<uint64_t>(range.offset), dst, bytes);
}

// Number of values a TensorProto holds in its typed field for `dtype`.
int typed_field_size(const onnx::TensorProto& p, DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32: return p.float_data_size();
    case DataType::kFloat64: return p.double_data_size();
    case DataType::kInt64: return p.int64_data_size();
    case DataType::kUInt64: case DataType::kUInt32: return p.uint64_data_size();
    default: return p.int32_data_size();
  }
}

}  // namespace

ExternalFilesScope::ExternalFilesScope(const ExternalFiles* files) : previous_(t_external_files) {
  t_external_files = files && !files->empty() ? files : nullptr;
}
ExternalFilesScope::~ExternalFilesScope() { t_external_files = previous_; }
const ExternalFiles* ExternalFilesScope::current() { return t_external_files; }

Result<Tensor> tensor_from_proto(const onnx::TensorProto& proto, const std::filesystem::path& base_dir) {
  return tensor_from_proto(proto, base_dir, nullptr);
}

Result<Tensor> tensor_from_proto(const onnx::TensorProto& proto, const std::filesystem::path& base_dir,
                                 const FileRange* raw_data) {
  SPINDLE_ASSIGN_OR_RETURN(DataType dtype, dtype_from_onnx(proto.data_type()));
  Shape shape(proto.dims().begin(), proto.dims().end());
  const std::string name = proto.name().empty() ? "<unnamed>" : proto.name();
  for (int64_t d : shape)
    if (d < 0) return invalid_argument(fmt::format("tensor '{}' has a negative dimension in {}", name, shape_to_string(shape)));
  // Sizes are checked against the data present before anything is allocated.
  const std::optional<int64_t> numel = checked_numel(shape);
  const std::optional<int64_t> nbytes =
      numel ? checked_mul(*numel, static_cast<int64_t>(dtype_size(dtype))) : std::nullopt;
  if (!nbytes)
    return invalid_argument(fmt::format("tensor '{}' has dimensions {} whose size overflows 64 bits", name,
                                        fmt::join(shape, ", ")));
  const size_t bytes = static_cast<size_t>(*nbytes);
  const std::string described = fmt::format("{} {}", dtype_name(dtype), shape_to_string(shape));
  if (dtype == DataType::kString) {
    if (proto.data_location() == onnx::TensorProto_DataLocation_EXTERNAL || proto.has_raw_data() || raw_data)
      return invalid_argument(fmt::format("string tensor '{}' must keep its values in string_data", name));
    if (proto.string_data_size() != *numel)
      return invalid_argument(fmt::format("tensor '{}' ({}) has {} strings, expected {}", name, described,
                                          proto.string_data_size(), *numel));
    Tensor t(dtype, shape);
    std::copy(proto.string_data().begin(), proto.string_data().end(), t.mutable_data<std::string>());
    return t;
  }
  if (proto.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    SPINDLE_ASSIGN_OR_RETURN(ExternalRange range, locate_external(proto, name, base_dir, bytes));
    Tensor t = uninitialized(dtype, std::move(shape), bytes);
    SPINDLE_RETURN_IF_ERROR(read_external(range, t.raw_mutable_data(), bytes));
    return t;
  }
  if (proto.has_raw_data() || raw_data) {
    const size_t held = raw_data ? raw_data->size : proto.raw_data().size();
    if (held != bytes)
      return invalid_argument(fmt::format("tensor '{}' ({}) holds {} bytes of data, expected {}", name, described, held,
                                          bytes));
    Tensor t = uninitialized(dtype, std::move(shape), bytes);
    if (raw_data)
      SPINDLE_RETURN_IF_ERROR(raw_data->file->read_at(raw_data->offset, t.raw_mutable_data(), bytes));
    else if (bytes)
      std::memcpy(t.raw_mutable_data(), proto.raw_data().data(), bytes);
    return t;
  }
  if (typed_field_size(proto, dtype) != *numel)
    return invalid_argument(fmt::format("tensor '{}' ({}) has {} values, expected {}", name, described,
                                        typed_field_size(proto, dtype), *numel));
  Tensor t(dtype, shape);
  switch (dtype) {
    case DataType::kFloat32: copy_field<float>(t, proto.float_data()); break;
    case DataType::kFloat64: copy_field<double>(t, proto.double_data()); break;
    case DataType::kInt64: copy_field<int64_t>(t, proto.int64_data()); break;
    case DataType::kUInt64: copy_field<uint64_t>(t, proto.uint64_data()); break;
    case DataType::kUInt32: copy_field<uint32_t>(t, proto.uint64_data()); break;
    case DataType::kInt32: copy_field<int32_t>(t, proto.int32_data()); break;
    case DataType::kInt16: copy_field<int16_t>(t, proto.int32_data()); break;
    case DataType::kUInt16: case DataType::kFloat16: case DataType::kBFloat16:
      copy_field<uint16_t>(t, proto.int32_data());
      break;
    case DataType::kInt8: copy_field<int8_t>(t, proto.int32_data()); break;
    case DataType::kUInt8: copy_field<uint8_t>(t, proto.int32_data()); break;
    case DataType::kBool: copy_field<bool>(t, proto.int32_data()); break;
    default: return unsupported(fmt::format("tensor '{}': element type {} is not supported", name, dtype_name(dtype)));
  }
  return t;
}

Result<Tensor> read_tensor_pb(const std::filesystem::path& path) {
  SPINDLE_ASSIGN_OR_RETURN(const std::string bytes, read_whole_file(path, "tensor file", kMaxProtoFileBytes));
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes))
    return invalid_argument(fmt::format("{} is not a serialized onnx TensorProto", path.string()));
  std::error_code ec;
  return tensor_from_proto(proto, std::filesystem::absolute(path, ec).parent_path());
}

namespace {

Result<Tensor> sequence_from_proto(const onnx::SequenceProto& proto, const std::filesystem::path& base_dir,
                                   DataType empty_dtype, const std::string& origin) {
  if (proto.elem_type() != onnx::SequenceProto::TENSOR && !(proto.elem_type() == 0 && proto.tensor_values_size() == 0))
    return unsupported(fmt::format("{}: sequence element type {} is not supported (expected tensors)", origin,
                                   static_cast<int>(proto.elem_type())));
  std::vector<Tensor> items;
  for (const auto& tp : proto.tensor_values()) {
    SPINDLE_ASSIGN_OR_RETURN(Tensor t, tensor_from_proto(tp, base_dir));
    items.push_back(std::move(t));
  }
  const DataType dt = items.empty() ? empty_dtype : items[0].dtype();
  try {
    return Tensor::sequence(dt, std::move(items));
  } catch (const Error& e) {
    return invalid_argument(fmt::format("{}: {}", origin, e.status().message()));
  }
}

// Element type a TypeProto declares for its tensors (float when it does not).
DataType declared_dtype(const onnx::TypeProto& type) {
  const onnx::TypeProto* t = &type;
  while (t->has_optional_type() || t->has_sequence_type())
    t = t->has_optional_type() ? &t->optional_type().elem_type() : &t->sequence_type().elem_type();
  if (t->has_tensor_type()) {
    auto dt = dtype_from_onnx(t->tensor_type().elem_type());
    if (dt.is_ok()) return dt.value();
  }
  return DataType::kFloat32;
}

}  // namespace

Tensor as_declared_bfloat16(Tensor t, int32_t declared_elem_type) {
  if (t.dtype() != DataType::kUInt16 || declared_elem_type != static_cast<int32_t>(DataType::kBFloat16)) return t;
  const auto offset = static_cast<const char*>(t.raw_data()) - static_cast<const char*>(t.buffer()->data());
  return Tensor(DataType::kBFloat16, t.shape(), t.buffer(), static_cast<size_t>(offset));
}

Result<Tensor> read_value_pb(const std::filesystem::path& path, const onnx::TypeProto& type) {
  if (!type.has_optional_type() && !type.has_sequence_type()) {
    SPINDLE_ASSIGN_OR_RETURN(Tensor t, read_tensor_pb(path));
    return as_declared_bfloat16(std::move(t), type.has_tensor_type() ? type.tensor_type().elem_type() : 0);
  }
  SPINDLE_ASSIGN_OR_RETURN(const std::string bytes, read_whole_file(path, "value file", kMaxProtoFileBytes));
  const DataType dt = declared_dtype(type);
  if (type.has_sequence_type()) {
    onnx::SequenceProto proto;
    if (!proto.ParseFromString(bytes))
      return invalid_argument(fmt::format("{} is not a serialized onnx SequenceProto", path.string()));
    return sequence_from_proto(proto, path.parent_path(), dt, path.string());
  }
  onnx::OptionalProto proto;
  if (!proto.ParseFromString(bytes))
    return invalid_argument(fmt::format("{} is not a serialized onnx OptionalProto", path.string()));
  const bool of_sequence = type.optional_type().elem_type().has_sequence_type();
  Tensor held;
  if (proto.has_tensor_value()) {
    SPINDLE_ASSIGN_OR_RETURN(held, tensor_from_proto(proto.tensor_value(), path.parent_path()));
  } else if (proto.has_sequence_value()) {
    SPINDLE_ASSIGN_OR_RETURN(held, sequence_from_proto(proto.sequence_value(), path.parent_path(), dt, path.string()));
  } else if (proto.elem_type() != onnx::OptionalProto::UNDEFINED && proto.elem_type() != onnx::OptionalProto::TENSOR &&
             proto.elem_type() != onnx::OptionalProto::SEQUENCE) {
    return unsupported(fmt::format("{}: optional element type {} is not supported", path.string(),
                                   static_cast<int>(proto.elem_type())));
  }
  try {
    return Tensor::optional(held.defined() ? held.dtype() : dt, of_sequence, held);
  } catch (const Error& e) {
    return invalid_argument(fmt::format("{}: {}", path.string(), e.status().message()));
  }
}

}  // namespace spindle::io
