// serve_protocol.cpp — JSON and binary tensors of the Open Inference
// Protocol's REST infer request and response (see serve_protocol.h).
#include "serve_protocol.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <set>

#include <fmt/format.h>

namespace spindle::cli::serve {
namespace {

struct TypeName {
  DataType type;
  const char* name;
};
constexpr TypeName kTypes[] = {
    {DataType::kBool, "BOOL"},     {DataType::kUInt8, "UINT8"},     {DataType::kUInt16, "UINT16"},
    {DataType::kUInt32, "UINT32"}, {DataType::kUInt64, "UINT64"},   {DataType::kInt8, "INT8"},
    {DataType::kInt16, "INT16"},   {DataType::kInt32, "INT32"},     {DataType::kInt64, "INT64"},
    {DataType::kFloat16, "FP16"},  {DataType::kFloat32, "FP32"},    {DataType::kFloat64, "FP64"},
    {DataType::kString, "BYTES"},
};

HttpError bad(const std::string& message) { return HttpError(400, "bad_request", message); }

// Appends the leaves of a (possibly nested) data array to `out`.
void flatten(const nlohmann::json& j, std::vector<const nlohmann::json*>& out, const std::string& input, int depth) {
  if (depth > 64) throw bad(fmt::format("input '{}': data nested deeper than 64 levels", input));
  for (const auto& e : j) {
    if (e.is_array()) flatten(e, out, input, depth + 1);
    else out.push_back(&e);
  }
}

template <class T>
T json_integer(const nlohmann::json& e, const std::string& input, size_t i, const char* type) {
  if (e.is_number_unsigned()) {
    const uint64_t v = e.get<uint64_t>();
    if (v <= static_cast<uint64_t>(std::numeric_limits<T>::max())) return static_cast<T>(v);
  } else if (e.is_number_integer()) {
    const int64_t v = e.get<int64_t>();
    if (v >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
        (v < 0 || static_cast<uint64_t>(v) <= static_cast<uint64_t>(std::numeric_limits<T>::max())))
      return static_cast<T>(v);
  } else {
    throw bad(fmt::format("input '{}': element {} is {}, expected an integer ({})", input, i, e.type_name(), type));
  }
  throw bad(fmt::format("input '{}': element {} ({}) is out of range for {}", input, i, e.dump(), type));
}

template <class T>
void fill_integers(Tensor& t, const std::vector<const nlohmann::json*>& leaves, const std::string& input) {
  T* out = t.mutable_data<T>();
  const std::string type = datatype_text(t.dtype());
  for (size_t i = 0; i < leaves.size(); ++i) out[i] = json_integer<T>(*leaves[i], input, i, type.c_str());
}

double json_number(const nlohmann::json& e, const std::string& input, size_t i) {
  if (!e.is_number()) throw bad(fmt::format("input '{}': element {} is {}, expected a number", input, i, e.type_name()));
  return e.get<double>();
}

void fill_from_json(Tensor& t, const std::vector<const nlohmann::json*>& leaves, const std::string& input) {
  switch (t.dtype()) {
    case DataType::kUInt8: return fill_integers<uint8_t>(t, leaves, input);
    case DataType::kUInt16: return fill_integers<uint16_t>(t, leaves, input);
    case DataType::kUInt32: return fill_integers<uint32_t>(t, leaves, input);
    case DataType::kUInt64: return fill_integers<uint64_t>(t, leaves, input);
    case DataType::kInt8: return fill_integers<int8_t>(t, leaves, input);
    case DataType::kInt16: return fill_integers<int16_t>(t, leaves, input);
    case DataType::kInt32: return fill_integers<int32_t>(t, leaves, input);
    case DataType::kInt64: return fill_integers<int64_t>(t, leaves, input);
    case DataType::kFloat32: {
      float* out = t.mutable_data<float>();
      for (size_t i = 0; i < leaves.size(); ++i) out[i] = static_cast<float>(json_number(*leaves[i], input, i));
      return;
    }
    case DataType::kFloat64: {
      double* out = t.mutable_data<double>();
      for (size_t i = 0; i < leaves.size(); ++i) out[i] = json_number(*leaves[i], input, i);
      return;
    }
    case DataType::kFloat16: {
      auto* out = static_cast<uint16_t*>(t.raw_mutable_data());
      for (size_t i = 0; i < leaves.size(); ++i)
        out[i] = float_to_float16(static_cast<float>(json_number(*leaves[i], input, i)));
      return;
    }
    case DataType::kBool: {
      auto* out = static_cast<uint8_t*>(t.raw_mutable_data());
      for (size_t i = 0; i < leaves.size(); ++i) {
        if (!leaves[i]->is_boolean())
          throw bad(fmt::format("input '{}': element {} is {}, expected true or false (BOOL)", input, i,
                                leaves[i]->type_name()));
        out[i] = leaves[i]->get<bool>() ? 1 : 0;
      }
      return;
    }
    case DataType::kString: {
      auto* out = t.mutable_data<std::string>();
      for (size_t i = 0; i < leaves.size(); ++i) {
        if (!leaves[i]->is_string())
          throw bad(fmt::format("input '{}': element {} is {}, expected a string (BYTES)", input, i,
                                leaves[i]->type_name()));
        out[i] = leaves[i]->get<std::string>();
      }
      return;
    }
    default: throw bad(fmt::format("input '{}': datatype {} is not supported", input, datatype_text(t.dtype())));
  }
}

uint32_t read_u32le(const char* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint32_t>(b[0]) | static_cast<uint32_t>(b[1]) << 8 | static_cast<uint32_t>(b[2]) << 16 |
         static_cast<uint32_t>(b[3]) << 24;
}

// BYTES in binary form: each element a 4-byte little-endian length and its bytes.
void fill_strings_from_binary(Tensor& t, std::string_view bytes, const std::string& input, const std::string& what) {
  auto* out = t.mutable_data<std::string>();
  const int64_t n = t.numel();
  size_t pos = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (bytes.size() - pos < 4)
      throw bad(fmt::format("input '{}': binary BYTES data ends before element {} of {}", input, i, n));
    const uint32_t len = read_u32le(bytes.data() + pos);
    pos += 4;
    if (bytes.size() - pos < len)
      throw bad(fmt::format("input '{}': binary BYTES element {} declares {} bytes but only {} remain", input, i, len,
                            bytes.size() - pos));
    out[i].assign(bytes.data() + pos, len);
    pos += len;
  }
  if (pos != bytes.size())
    throw bad(fmt::format("input '{}': {} is {} but its {} BYTES elements take {}", input, what, bytes.size(), n, pos));
}

// Shape from the request, checked against the model's.
Shape parse_shape(const nlohmann::json& j, const std::string& input, const TensorInfo& info) {
  if (!j.is_array()) throw bad(fmt::format("input '{}': \"shape\" must be an array of integers", input));
  Shape shape;
  for (const auto& d : j) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0)
      throw bad(fmt::format("input '{}': \"shape\" {} holds {}, expected non-negative integers", input, j.dump(),
                            d.dump()));
    shape.push_back(d.get<int64_t>());
  }
  check_shape(shape, input, info);
  return shape;
}

const nlohmann::json* parameters_of(const nlohmann::json& j, const std::string& what) {
  auto it = j.find("parameters");
  if (it == j.end()) return nullptr;
  if (!it->is_object()) throw bad(fmt::format("{}: \"parameters\" must be an object", what));
  return &*it;
}

bool bool_parameter(const nlohmann::json* params, const char* key, const std::string& what) {
  if (!params) return false;
  auto it = params->find(key);
  if (it == params->end()) return false;
  if (!it->is_boolean()) throw bad(fmt::format("{}: parameter \"{}\" must be true or false", what, key));
  return it->get<bool>();
}

std::string names_of(const std::vector<TensorInfo>& infos) {
  std::string s;
  for (const TensorInfo& i : infos) s += fmt::format("{}'{}'", s.empty() ? "" : ", ", i.name);
  return s;
}

void append_u32le(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

nlohmann::json json_data(const Tensor& t) {
  const int64_t n = t.numel();
  nlohmann::json a = nlohmann::json::array();
  auto each = [&](auto get) {
    for (int64_t i = 0; i < n; ++i) a.push_back(get(i));
  };
  const void* p = t.raw_data();
  switch (t.dtype()) {
    case DataType::kUInt8: each([&](int64_t i) { return static_cast<const uint8_t*>(p)[i]; }); break;
    case DataType::kUInt16: each([&](int64_t i) { return static_cast<const uint16_t*>(p)[i]; }); break;
    case DataType::kUInt32: each([&](int64_t i) { return static_cast<const uint32_t*>(p)[i]; }); break;
    case DataType::kUInt64: each([&](int64_t i) { return static_cast<const uint64_t*>(p)[i]; }); break;
    case DataType::kInt8: each([&](int64_t i) { return static_cast<const int8_t*>(p)[i]; }); break;
    case DataType::kInt16: each([&](int64_t i) { return static_cast<const int16_t*>(p)[i]; }); break;
    case DataType::kInt32: each([&](int64_t i) { return static_cast<const int32_t*>(p)[i]; }); break;
    case DataType::kInt64: each([&](int64_t i) { return static_cast<const int64_t*>(p)[i]; }); break;
    case DataType::kFloat32: each([&](int64_t i) { return static_cast<const float*>(p)[i]; }); break;
    case DataType::kFloat64: each([&](int64_t i) { return static_cast<const double*>(p)[i]; }); break;
    case DataType::kFloat16:
      each([&](int64_t i) { return float16_to_float(static_cast<const uint16_t*>(p)[i]); });
      break;
    case DataType::kBool: each([&](int64_t i) { return static_cast<const uint8_t*>(p)[i] != 0; }); break;
    case DataType::kString: each([&](int64_t i) { return static_cast<const std::string*>(p)[i]; }); break;
    default: throw HttpError(500, "run_error", "output of datatype " + dtype_name(t.dtype()) + " cannot be returned");
  }
  return a;
}

}  // namespace

std::string datatype_text(DataType t) { return protocol_datatype(t).value_or(dtype_name(t)); }

std::optional<std::string> protocol_datatype(DataType t) {
  for (const TypeName& n : kTypes)
    if (n.type == t) return std::string(n.name);
  return std::nullopt;
}

std::optional<DataType> datatype_from_protocol(std::string_view name) {
  for (const TypeName& n : kTypes)
    if (name == n.name) return n.type;
  return std::nullopt;
}

std::string shape_text(const Shape& shape) {
  // A request's shape may have any number of dimensions: messages name 16.
  constexpr size_t kShown = 16;
  std::string s = "[";
  for (size_t i = 0; i < std::min(shape.size(), kShown); ++i) s += fmt::format("{}{}", i ? "," : "", shape[i]);
  if (shape.size() > kShown) s += fmt::format(",... ({} dimensions)", shape.size());
  return s + "]";
}

const TensorInfo& check_input(const std::string& name, const std::string& datatype,
                              const std::vector<TensorInfo>& inputs, std::set<std::string>& seen) {
  const TensorInfo* info = nullptr;
  for (const TensorInfo& t : inputs)
    if (t.name == name) info = &t;
  if (!info) throw bad(fmt::format("unknown input '{}'; the model's inputs are {}", name, names_of(inputs)));
  if (!seen.insert(name).second) throw bad(fmt::format("input '{}' is given twice", name));
  if (info->is_sequence || info->is_optional)
    throw bad(fmt::format("input '{}' is a sequence or optional value; the protocol carries tensors only", name));
  const std::string expected = datatype_text(info->dtype);
  if (datatype != expected)
    throw bad(fmt::format("input '{}': datatype {} but the model expects {}", name, datatype, expected));
  return *info;
}

void check_shape(const Shape& shape, const std::string& input, const TensorInfo& info) {
  for (int64_t d : shape)
    if (d < 0)
      throw bad(fmt::format("input '{}': shape {} has a negative dimension, expected sizes of at least 0", input,
                            shape_text(shape)));
  bool fits = shape.size() == info.shape.size();
  for (size_t i = 0; fits && i < shape.size(); ++i) fits = info.shape[i] < 0 || info.shape[i] == shape[i];
  if (!fits)
    throw bad(fmt::format("input '{}': shape {} does not match the model's {}", input, shape_text(shape),
                          shape_text(info.shape)));
  if (!checked_numel(shape)) throw bad(fmt::format("input '{}': shape {} is too large", input, shape_text(shape)));
}

Tensor new_input(const TensorInfo& info, const Shape& shape, const std::string& input) {
  try {
    return Tensor(info.dtype, shape);
  } catch (const Error& e) {
    throw bad(fmt::format("input '{}': {}", input, e.what()));
  } catch (const std::bad_alloc&) {
    throw bad(fmt::format("input '{}': shape {} does not fit in memory", input, shape_text(shape)));
  }
}

Tensor tensor_from_bytes(const TensorInfo& info, const Shape& shape, std::string_view bytes, const std::string& input,
                         const std::string& what) {
  const int64_t numel = *checked_numel(shape);
  const uint64_t size = bytes.size();
  Tensor t;
  if (info.dtype == DataType::kString) {
    // Each element takes at least its 4-byte length.
    if (static_cast<uint64_t>(numel) > size / 4)
      throw bad(fmt::format("input '{}': {} is {}, too small for the {} BYTES elements of shape {}", input, what, size,
                            numel, shape_text(shape)));
    t = new_input(info, shape, input);
    fill_strings_from_binary(t, bytes, input, what);
  } else {
    const auto want = checked_mul(numel, static_cast<int64_t>(dtype_size(info.dtype)));
    if (!want || size != static_cast<uint64_t>(*want))
      throw bad(fmt::format("input '{}': {} is {} but shape {} of {} needs {} bytes", input, what, size,
                            shape_text(shape), datatype_text(info.dtype), want ? std::to_string(*want) : "too many"));
    t = new_input(info, shape, input);
    if (size) std::memcpy(t.raw_mutable_data(), bytes.data(), size);
  }
  return t;
}

void check_all_inputs(const std::vector<TensorInfo>& inputs, const std::set<std::string>& seen) {
  for (const TensorInfo& t : inputs)
    if (!t.is_optional && !seen.count(t.name))
      throw bad(fmt::format("missing input '{}' ({} {}); the model's inputs are {}", t.name, datatype_text(t.dtype),
                            shape_text(t.shape), names_of(inputs)));
}

void add_output(const std::string& name, const std::vector<TensorInfo>& outputs, std::vector<std::string>& chosen) {
  bool known = false;
  for (const TensorInfo& t : outputs) known = known || t.name == name;
  if (!known) throw bad(fmt::format("unknown output '{}'; the model's outputs are {}", name, names_of(outputs)));
  for (const std::string& prev : chosen)
    if (prev == name) throw bad(fmt::format("output '{}' is requested twice", name));
  chosen.push_back(name);
}

std::string output_datatype(const Tensor& t, const std::string& name) {
  if (!t.is_tensor())
    throw HttpError(500, "run_error",
                    fmt::format("output '{}' is a sequence or optional value; the protocol carries tensors only", name));
  const auto datatype = protocol_datatype(t.dtype());
  if (!datatype)
    throw HttpError(500, "run_error",
                    fmt::format("output '{}' has datatype {}, which the protocol lacks", name, dtype_name(t.dtype())));
  return *datatype;
}

void append_bytes(std::string& out, const Tensor& t) {
  if (t.dtype() == DataType::kString) {
    const auto* s = static_cast<const std::string*>(t.raw_data());
    for (int64_t k = 0; k < t.numel(); ++k) {
      append_u32le(out, static_cast<uint32_t>(s[k].size()));
      out += s[k];
    }
  } else {
    out.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  }
}

InferRequest parse_infer_request(std::string_view body, std::optional<int64_t> header_length,
                                 const std::vector<TensorInfo>& inputs, const std::vector<TensorInfo>& outputs) {
  size_t json_size = body.size();
  if (header_length) {
    if (*header_length < 0 || static_cast<uint64_t>(*header_length) > body.size())
      throw bad(fmt::format("Inference-Header-Content-Length is {} but the body has {} bytes", *header_length,
                            body.size()));
    json_size = static_cast<size_t>(*header_length);
  }
  const std::string_view binary = body.substr(json_size);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body.substr(0, json_size));
  } catch (const nlohmann::json::parse_error& e) {
    throw bad(fmt::format("malformed JSON in the request: {}", e.what()));
  }
  if (!j.is_object()) throw bad("the request must be a JSON object with \"inputs\"");
  InferRequest r;
  if (auto it = j.find("id"); it != j.end()) {
    if (!it->is_string()) throw bad("\"id\" must be a string");
    r.id = it->get<std::string>();
    r.has_id = true;
  }
  const nlohmann::json* params = parameters_of(j, "the request");
  if (params) {
    if (auto it = params->find("timeout"); it != params->end()) {
      if (!it->is_number_integer() || it->get<int64_t>() < 0)
        throw bad("parameter \"timeout\" must be a non-negative integer (microseconds)");
      if (it->get<int64_t>() > 0) r.timeout_us = it->get<int64_t>();
    }
  }
  const bool all_binary = bool_parameter(params, "binary_data_output", "the request");

  auto in = j.find("inputs");
  if (in == j.end() || !in->is_array()) throw bad("the request has no \"inputs\" array");
  std::set<std::string> seen;
  size_t offset = 0;
  for (const auto& input : *in) {
    if (!input.is_object()) throw bad("each of \"inputs\" must be an object");
    auto name_it = input.find("name");
    if (name_it == input.end() || !name_it->is_string()) throw bad("an input has no \"name\" string");
    const std::string name = name_it->get<std::string>();
    auto dt_it = input.find("datatype");
    if (dt_it == input.end() || !dt_it->is_string()) throw bad(fmt::format("input '{}' has no \"datatype\"", name));
    const std::string datatype = dt_it->get<std::string>();
    const TensorInfo* info = &check_input(name, datatype, inputs, seen);
    auto shape_it = input.find("shape");
    if (shape_it == input.end()) throw bad(fmt::format("input '{}' has no \"shape\"", name));
    Shape shape = parse_shape(*shape_it, name, *info);
    const int64_t numel = *checked_numel(shape);
    const nlohmann::json* in_params = parameters_of(input, "input '" + name + "'");
    Tensor t;
    if (in_params && in_params->contains("binary_data_size")) {
      const auto& s = (*in_params)["binary_data_size"];
      if (!s.is_number_integer() || s.get<int64_t>() < 0)
        throw bad(fmt::format("input '{}': binary_data_size must be a non-negative integer", name));
      const auto size = static_cast<uint64_t>(s.get<int64_t>());
      if (size > binary.size() - offset)
        throw bad(fmt::format("input '{}': truncated binary data: binary_data_size is {} at offset {} but only {} bytes "
                              "follow the JSON header",
                              name, size, offset, binary.size() - offset));
      t = tensor_from_bytes(*info, shape, binary.substr(offset, size), name, "binary_data_size");
      offset += size;
    } else {
      auto data_it = input.find("data");
      if (data_it == input.end() || !data_it->is_array())
        throw bad(fmt::format("input '{}' has neither a \"data\" array nor binary_data_size", name));
      std::vector<const nlohmann::json*> leaves;
      flatten(*data_it, leaves, name, 0);
      if (static_cast<int64_t>(leaves.size()) != numel)
        throw bad(fmt::format("input '{}': {} data elements but shape {} holds {}", name, leaves.size(),
                              shape_text(shape), numel));
      t = new_input(*info, shape, name);
      fill_from_json(t, leaves, name);
    }
    r.feeds.emplace_back(name, std::move(t));
  }
  if (offset != binary.size())
    throw bad(fmt::format("{} bytes of binary data follow the JSON header but the inputs' binary_data_size total {}",
                          binary.size(), offset));
  check_all_inputs(inputs, seen);

  if (auto out = j.find("outputs"); out != j.end()) {
    if (!out->is_array()) throw bad("\"outputs\" must be an array");
    for (const auto& o : *out) {
      if (!o.is_object() || !o.contains("name") || !o["name"].is_string())
        throw bad("each of \"outputs\" must be an object with a \"name\"");
      const std::string name = o["name"].get<std::string>();
      add_output(name, outputs, r.outputs);
      const nlohmann::json* op = parameters_of(o, "output '" + name + "'");
      r.binary.push_back(op && op->contains("binary_data") ? bool_parameter(op, "binary_data", "output '" + name + "'")
                                                           : all_binary);
    }
  }
  if (r.outputs.empty())
    for (const TensorInfo& t : outputs) {
      r.outputs.push_back(t.name);
      r.binary.push_back(all_binary);
    }
  return r;
}

std::string build_infer_response(const std::string& model, const std::string& version, const InferRequest& request,
                                 const std::vector<Tensor>& values, size_t& json_length) {
  nlohmann::json j;
  j["model_name"] = model;
  j["model_version"] = version;
  if (request.has_id) j["id"] = request.id;
  j["outputs"] = nlohmann::json::array();
  std::string binary;
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string& name = request.outputs[i];
    const std::string datatype = output_datatype(values[i], name);
    const Tensor c = values[i].is_contiguous() ? values[i] : values[i].clone();
    nlohmann::json o{{"name", name}, {"datatype", datatype}, {"shape", c.shape()}};
    if (request.binary[i]) {
      const size_t before = binary.size();
      append_bytes(binary, c);
      o["parameters"] = {{"binary_data_size", binary.size() - before}};
    } else {
      o["data"] = json_data(c);
    }
    j["outputs"].push_back(std::move(o));
  }
  std::string body = j.dump();
  json_length = 0;
  bool any_binary = false;
  for (bool b : request.binary) any_binary = any_binary || b;
  if (any_binary) {
    json_length = body.size();
    body += binary;
  }
  return body;
}

std::vector<std::string> server_extensions() { return {"binary_tensor_data", "model_repository", "metrics"}; }

nlohmann::json tensor_metadata(const std::vector<TensorInfo>& infos) {
  nlohmann::json a = nlohmann::json::array();
  for (const TensorInfo& t : infos) {
    nlohmann::json shape = nlohmann::json::array();
    for (int64_t d : t.shape) shape.push_back(d < 0 ? -1 : d);
    a.push_back({{"name", t.name}, {"datatype", datatype_text(t.dtype)}, {"shape", shape}});
  }
  return a;
}

}  // namespace spindle::cli::serve
