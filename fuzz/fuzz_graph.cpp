// fuzz_graph.cpp — structure-aware libFuzzer target: the input is not a
// model but a few mutation choices applied to a small, valid graph, an ONNX
// backend test model (Debian libonnx-testdata, node/*), which is then loaded
// and run on its own test inputs. Byte mutations of whole models mostly end
// in the protobuf parser; this target reaches the kernels with graphs that
// are valid except for one dimension, attribute, constant or index.
//
// Input format (little-endian; missing bytes read as 0):
//   bytes 0-1   model: index into the sorted node/ test directories (mod count)
//   then records of 5 bytes: kind, a, b, c, v
//     kind % 7:
//       0  declared graph-input dimension: input a, dim b := value v
//       1  fed input tensor dimension: input a, dim b := value v (data kept)
//       2  fed input tensor element: input a, element (b | c << 8) := value v
//       3  initializer dimension: initializer a, dim b := value v
//       4  initializer element: initializer a, element (b | c << 8) := value v
//       5  node attribute a-th node, b-th attribute: int, ints[c], float,
//          floats[c], or a tensor attribute's element / dimension := value v
//       6  node input: input b of node a := "" (c == 0) or another value name
//   value v: an entry of kValues (small numbers, -1, boundaries, 2^62, NaN...).
// The test data directory can be moved with SPINDLE_FUZZ_ONNX_NODE_DIR.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "fuzz_util.h"
#include "io/tensor_proto.h"

namespace spindle::fuzz {
namespace {

namespace fs = std::filesystem;

struct Value {
  int64_t i;
  double f;
};
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr Value kValues[] = {
    {0, 0.0},
    {1, 1.0},
    {-1, -1.0},
    {2, 2.0},
    {3, 0.5},
    {4, -0.5},
    {7, 7.0},
    {-2, -2.0},
    {16, 1e-3},
    {100, 100.0},
    {-100, -1e30},
    {1000, 1e30},
    {1 << 20, kInf},
    {-(1 << 20), -kInf},
    {std::numeric_limits<int32_t>::max(), kNaN},
    {std::numeric_limits<int32_t>::min(), -0.0},
    {int64_t{1} << 31, 65504.0},
    {std::numeric_limits<int64_t>::max(), 3.4e38},
    {std::numeric_limits<int64_t>::min(), -3.4e38},
    {int64_t{1} << 62, 1e-40},
    {(int64_t{1} << 62) + 1, 1e300},
    {int64_t{1} << 40, -1e300},
    {-(int64_t{1} << 40), 0.25},
    {255, 255.0},
};
constexpr size_t kNumValues = sizeof(kValues) / sizeof(kValues[0]);

size_t elem_size(int32_t data_type) {
  switch (data_type) {
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::BOOL: return 1;
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16: return 2;
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::UINT32: return 4;
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::UINT64:
    case onnx::TensorProto::COMPLEX64: return 8;
    default: return 0;
  }
}

template <class T>
void put(std::string& raw, size_t at, T v) {
  std::memcpy(raw.data() + at, &v, sizeof(T));
}

// Element `index` (modulo the element count the storage holds) := value.
void set_element(onnx::TensorProto& t, size_t index, const Value& value) {
  const float f = static_cast<float>(value.f);
  if (!t.raw_data().empty()) {
    const size_t size = elem_size(t.data_type());
    if (size == 0 || t.raw_data().size() < size) return;
    const size_t at = (index % (t.raw_data().size() / size)) * size;
    std::string& raw = *t.mutable_raw_data();
    switch (t.data_type()) {
      case onnx::TensorProto::FLOAT: put(raw, at, f); break;
      case onnx::TensorProto::DOUBLE: put(raw, at, value.f); break;
      case onnx::TensorProto::FLOAT16: put(raw, at, float_to_float16(f)); break;
      case onnx::TensorProto::BOOL: put(raw, at, static_cast<uint8_t>(value.i & 1)); break;
      default:  // integers: the low bytes of the value
        std::memcpy(raw.data() + at, &value.i, size);
        break;
    }
    return;
  }
  if (t.float_data_size() > 0) {
    t.set_float_data(static_cast<int>(index % static_cast<size_t>(t.float_data_size())), f);
  } else if (t.int32_data_size() > 0) {
    const int32_t v = t.data_type() == onnx::TensorProto::FLOAT16 ? float_to_float16(f) : static_cast<int32_t>(value.i);
    t.set_int32_data(static_cast<int>(index % static_cast<size_t>(t.int32_data_size())), v);
  } else if (t.int64_data_size() > 0) {
    t.set_int64_data(static_cast<int>(index % static_cast<size_t>(t.int64_data_size())), value.i);
  } else if (t.double_data_size() > 0) {
    t.set_double_data(static_cast<int>(index % static_cast<size_t>(t.double_data_size())), value.f);
  } else if (t.uint64_data_size() > 0) {
    t.set_uint64_data(static_cast<int>(index % static_cast<size_t>(t.uint64_data_size())), static_cast<uint64_t>(value.i));
  }
}

void set_dim(onnx::TensorProto& t, size_t dim, const Value& value) {
  if (t.dims_size() > 0) t.set_dims(static_cast<int>(dim % static_cast<size_t>(t.dims_size())), value.i);
}

// A backend test model and its test_data_set_0 inputs, parsed once.
struct Case {
  onnx::ModelProto model;
  std::vector<fs::path> input_files;                // input_<i>.pb, graph input order
  std::vector<std::optional<onnx::TensorProto>> tensors;  // the parsed file when the input is a tensor
};

const std::vector<fs::path>& case_dirs() {
  static const std::vector<fs::path> dirs = [] {
    const char* env = std::getenv("SPINDLE_FUZZ_ONNX_NODE_DIR");
    const fs::path root = env ? env : "/usr/share/libonnx-testdata/data/node";
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root, ec))
      if (fs::exists(e.path() / "model.onnx") && fs::exists(e.path() / "test_data_set_0")) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    if (out.empty()) {
      std::fprintf(stderr, "fuzz_graph: no backend test models under %s (Debian package libonnx-testdata)\n",
                   root.c_str());
      std::abort();
    }
    return out;
  }();
  return dirs;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// nullptr when the model does not parse or its inputs are too large.
const Case* load_case(size_t index) {
  static std::map<size_t, std::optional<Case>> cache;
  auto it = cache.find(index);
  if (it == cache.end()) {
    std::optional<Case> c(std::in_place);
    const fs::path dir = case_dirs()[index];
    if (!c->model.ParseFromString(read_file(dir / "model.onnx"))) c.reset();
    uintmax_t bytes = 0;
    for (int i = 0; c && i < c->model.graph().input_size(); ++i) {
      const fs::path p = dir / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb");
      if (!fs::exists(p)) break;
      bytes += fs::file_size(p);
      c->input_files.push_back(p);
      std::optional<onnx::TensorProto> t;
      if (c->model.graph().input(i).type().has_tensor_type()) {
        t.emplace();
        if (!t->ParseFromString(read_file(p))) c.reset();
      }
      if (c) c->tensors.push_back(std::move(t));
    }
    if (bytes > 4 * kMaxInputElements * sizeof(double)) c.reset();
    it = cache.emplace(index, std::move(c)).first;
  }
  return it->second ? &*it->second : nullptr;
}

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  bool done() const { return pos_ >= size_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

template <class Seq>
auto* pick(Seq* seq, uint8_t k) {
  return seq->empty() ? nullptr : seq->Mutable(static_cast<int>(k % static_cast<unsigned>(seq->size())));
}

void mutate_attribute(onnx::AttributeProto& attr, uint8_t c, const Value& value) {
  switch (attr.type()) {
    case onnx::AttributeProto::INT: attr.set_i(value.i); break;
    case onnx::AttributeProto::FLOAT: attr.set_f(static_cast<float>(value.f)); break;
    case onnx::AttributeProto::INTS:
      if (attr.ints_size() > 0) attr.set_ints(c % attr.ints_size(), value.i);
      break;
    case onnx::AttributeProto::FLOATS:
      if (attr.floats_size() > 0) attr.set_floats(c % attr.floats_size(), static_cast<float>(value.f));
      break;
    case onnx::AttributeProto::TENSOR:
      if (c & 1) set_dim(*attr.mutable_t(), c >> 1, value);
      else set_element(*attr.mutable_t(), c >> 1, value);
      break;
    default: break;
  }
}

// Every value name of the graph (inputs, initializers, node outputs).
std::vector<std::string> value_names(const onnx::GraphProto& g) {
  std::vector<std::string> names;
  for (const auto& v : g.input()) names.push_back(v.name());
  for (const auto& t : g.initializer()) names.push_back(t.name());
  for (const auto& n : g.node())
    for (const auto& o : n.output()) names.push_back(o);
  return names;
}

void one_input(const uint8_t* data, size_t size) {
  Reader in(data, size);
  const size_t low = in.byte();  // two statements: the operands of | are unsequenced
  const size_t index = (low | (size_t{in.byte()} << 8)) % case_dirs().size();
  const Case* c = load_case(index);
  if (!c) return;
  onnx::ModelProto model = c->model;
  std::vector<std::optional<onnx::TensorProto>> tensors = c->tensors;
  onnx::GraphProto& g = *model.mutable_graph();
  for (int records = 0; !in.done() && records < 8; ++records) {
    const uint8_t kind = in.byte(), a = in.byte(), b = in.byte(), cc = in.byte();
    const Value& value = kValues[in.byte() % kNumValues];
    switch (kind % 7) {
      case 0:
        if (auto* v = pick(g.mutable_input(), a); v && v->type().has_tensor_type()) {
          auto* dims = v->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim();
          if (auto* d = pick(dims, b)) d->set_dim_value(value.i);
        }
        break;
      case 1:
      case 2:
        if (!tensors.empty()) {
          auto& t = tensors[a % tensors.size()];
          if (!t) break;
          if (kind % 7 == 1) set_dim(*t, b, value);
          else set_element(*t, b | (cc << 8), value);
        }
        break;
      case 3:
        if (auto* t = pick(g.mutable_initializer(), a)) set_dim(*t, b, value);
        break;
      case 4:
        if (auto* t = pick(g.mutable_initializer(), a)) set_element(*t, b | (cc << 8), value);
        break;
      case 5:
        if (auto* n = pick(g.mutable_node(), a))
          if (auto* attr = pick(n->mutable_attribute(), b)) mutate_attribute(*attr, cc, value);
        break;
      case 6:
        if (auto* n = pick(g.mutable_node(), a))
          if (auto* name = pick(n->mutable_input(), b)) {
            if (cc == 0) {
              name->clear();
            } else {
              const auto names = value_names(g);
              if (!names.empty()) *name = names[cc % names.size()];
            }
          }
        break;
    }
  }

  const std::string bytes = model.SerializeAsString();
  guarded([&] {
    auto session = InferenceSession::create_from_bytes(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), fuzz_session_options());
    Feeds feeds;
    for (size_t i = 0; i < c->input_files.size(); ++i) {
      const onnx::ValueInfoProto& info = model.graph().input(static_cast<int>(i));
      Result<Tensor> v = tensors[i] ? io::tensor_from_proto(*tensors[i])
                                    : io::read_value_pb(c->input_files[i], info.type());
      if (!v.is_ok()) return;
      feeds.emplace_back(info.name(), std::move(v).value());
    }
    run_capped(*session, feeds);
  });
}

}  // namespace
}  // namespace spindle::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  spindle::fuzz::one_input(data, size);
  return 0;
}
