// attributes.cpp — see attributes.h.
#include "common/attributes.h"

#include <fmt/format.h>

#include "spindle/status.h"

namespace spindle {

const AttrValue& Attributes::at(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw Error(StatusCode::kInvalidArgument, fmt::format("missing required attribute '{}'", name));
  return it->second;
}

namespace {
template <class T>
const T& typed(const AttrValue& v, const std::string& name, const char* expected) {
  if (const T* p = std::get_if<T>(&v)) return *p;
  throw Error(StatusCode::kInvalidArgument, fmt::format("attribute '{}' is not {}", name, expected));
}
}  // namespace

int64_t Attributes::get_int(const std::string& name) const { return typed<int64_t>(at(name), name, "an int"); }
int64_t Attributes::get_int(const std::string& name, int64_t def) const { return has(name) ? get_int(name) : def; }
float Attributes::get_float(const std::string& name) const {
  const AttrValue& v = at(name);
  if (const int64_t* i = std::get_if<int64_t>(&v)) return static_cast<float>(*i);
  return typed<float>(v, name, "a float");
}
float Attributes::get_float(const std::string& name, float def) const { return has(name) ? get_float(name) : def; }
std::string Attributes::get_string(const std::string& name) const { return typed<std::string>(at(name), name, "a string"); }
std::string Attributes::get_string(const std::string& name, const std::string& def) const {
  return has(name) ? get_string(name) : def;
}
std::vector<int64_t> Attributes::get_ints(const std::string& name) const {
  return typed<std::vector<int64_t>>(at(name), name, "a list of ints");
}
std::vector<int64_t> Attributes::get_ints(const std::string& name, const std::vector<int64_t>& def) const {
  return has(name) ? get_ints(name) : def;
}
std::vector<float> Attributes::get_floats(const std::string& name) const {
  return typed<std::vector<float>>(at(name), name, "a list of floats");
}
std::vector<float> Attributes::get_floats(const std::string& name, const std::vector<float>& def) const {
  return has(name) ? get_floats(name) : def;
}
std::vector<std::string> Attributes::get_strings(const std::string& name) const {
  return typed<std::vector<std::string>>(at(name), name, "a list of strings");
}
Tensor Attributes::get_tensor(const std::string& name) const { return typed<Tensor>(at(name), name, "a tensor"); }
TypeAttr Attributes::get_type(const std::string& name) const { return typed<TypeAttr>(at(name), name, "a type"); }
bool Attributes::has_graph() const {
  for (const auto& [_, v] : values_)
    if (std::holds_alternative<GraphAttr>(v)) return true;
  return false;
}

}  // namespace spindle
