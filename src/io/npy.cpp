// npy.cpp — see npy.h.
#include "io/npy.h"

#include <cstring>
#include <fstream>
#include <regex>

#include <fmt/format.h>

#include "graph/onnx_convert.h"

namespace spindle::io {
namespace {

struct Descr {
  const char* code;
  DataType dtype;
};
constexpr Descr kDescrs[] = {
    {"<f4", DataType::kFloat32}, {"<f8", DataType::kFloat64}, {"<i8", DataType::kInt64}, {"<i4", DataType::kInt32},
    {"<i2", DataType::kInt16},   {"|i1", DataType::kInt8},    {"|u1", DataType::kUInt8}, {"<u2", DataType::kUInt16},
    {"<u4", DataType::kUInt32},  {"<u8", DataType::kUInt64},  {"|b1", DataType::kBool},  {"<f2", DataType::kFloat16},
};

}  // namespace

Result<Tensor> read_npy(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(fmt::format("{}: cannot open the file", path.string()));
  const std::string where = path.string();
  char magic[8] = {};
  in.read(magic, 8);
  if (in.gcount() != 8 || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    return invalid_argument(fmt::format("{}: not a .npy file (expected the \\x93NUMPY magic)", where));
  const int major = static_cast<unsigned char>(magic[6]);
  uint32_t header_len = 0;
  if (major == 1) {
    unsigned char b[2];
    in.read(reinterpret_cast<char*>(b), 2);
    header_len = b[0] | (b[1] << 8);
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    in.read(reinterpret_cast<char*>(b), 4);
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  } else {
    return invalid_argument(fmt::format("{}: .npy format version {} is not supported (expected 1, 2 or 3)", where, major));
  }
  if (!in || header_len > (1u << 20)) return invalid_argument(fmt::format("{}: truncated .npy header", where));
  std::string header(header_len, '\0');
  in.read(header.data(), header_len);
  if (static_cast<uint32_t>(in.gcount()) != header_len) return invalid_argument(fmt::format("{}: truncated .npy header", where));

  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([^']*)')")))
    return invalid_argument(fmt::format("{}: .npy header has no 'descr'", where));
  std::string descr = m[1];
  if (descr == "=f4" || descr == "f4") descr = "<f4";
  DataType dtype = DataType::kUndefined;
  for (const Descr& d : kDescrs)
    if (descr == d.code || (descr.size() == 3 && descr[0] == '=' && descr.substr(1) == std::string(d.code).substr(1)))
      dtype = d.dtype;
  if (dtype == DataType::kUndefined)
    return unsupported(fmt::format("{}: element type '{}' is not supported (expected little-endian numeric or bool)", where, descr));
  if (std::regex_search(header, m, std::regex(R"('fortran_order'\s*:\s*True)")))
    return unsupported(fmt::format("{}: Fortran-order arrays are not supported (save with C order)", where));
  if (!std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))")))
    return invalid_argument(fmt::format("{}: .npy header has no 'shape'", where));
  Shape shape;
  const std::string dims = m[1];
  static const std::regex kDim(R"(\d+)");
  for (std::sregex_iterator it(dims.begin(), dims.end(), kDim), end; it != end; ++it)
    shape.push_back(std::stoll(it->str()));
  Tensor t(dtype, shape);
  in.read(static_cast<char*>(t.raw_mutable_data()), static_cast<std::streamsize>(t.nbytes()));
  if (static_cast<size_t>(in.gcount()) != t.nbytes())
    return invalid_argument(fmt::format("{}: holds {} bytes of data, expected {} for {}", where, in.gcount(), t.nbytes(), t.describe()));
  return t;
}

Status write_npy(const std::filesystem::path& path, const Tensor& tensor) {
  if (!tensor.is_tensor())
    return unsupported(fmt::format("{}: cannot write the {} as .npy, which holds one tensor", path.string(), tensor.describe()));
  const char* code = nullptr;
  for (const Descr& d : kDescrs)
    if (d.dtype == tensor.dtype()) code = d.code;
  if (!code) return unsupported(fmt::format("{}: cannot write {} as .npy", path.string(), tensor.describe()));
  std::string shape = "(" + fmt::format("{}", fmt::join(tensor.shape(), ", ")) + (tensor.rank() == 1 ? ",)" : ")");
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", code, shape);
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary);
  if (!out) return not_found(fmt::format("{}: cannot create the file", path.string()));
  out.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  const char lb[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(lb, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(static_cast<const char*>(tensor.raw_data()), static_cast<std::streamsize>(tensor.nbytes()));
  if (!out) return runtime_error(fmt::format("{}: write failed", path.string()));
  return Status::ok();
}

Result<Tensor> read_tensor_file(const std::filesystem::path& path) {
  const std::string ext = path.extension().string();
  if (ext == ".npy") return read_npy(path);
  if (ext == ".pb") return graph::read_tensor_pb(path);
  return invalid_argument(fmt::format("{}: unknown tensor file type '{}' (expected .npy or .pb)", path.string(), ext));
}

}  // namespace spindle::io
