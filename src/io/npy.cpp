// npy.cpp — .npy files and tensor files by extension (see spindle/io.h).
#include "spindle/io.h"

#include <iconv.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "io/regular_file.h"
#include "io/tensor_proto.h"

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
    // bfloat16: numpy has no such type; ml_dtypes.bfloat16 arrays are saved
    // with this 2-byte void code (and load back as it, to view as bfloat16).
    {"<V2", DataType::kBFloat16},
};

// The longest .npy header read (a header of rank ~350,000 at most).
constexpr uint32_t kMaxHeaderBytes = 1u << 20;

}  // namespace

namespace {

// The header dict of a .npy file, parsed strictly: {'descr': '<f4',
// 'fortran_order': False, 'shape': (1, 3, 224, 224), } and nothing else.
struct Header {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& where) : s_(text), where_(where) {}

  Result<Header> parse() {
    Header h;
    bool has_descr = false, has_order = false, has_shape = false;
    SPINDLE_RETURN_IF_ERROR(expect('{'));
    while (!peek('}')) {
      SPINDLE_ASSIGN_OR_RETURN(std::string key, quoted());
      SPINDLE_RETURN_IF_ERROR(expect(':'));
      if (key == "descr") {
        SPINDLE_ASSIGN_OR_RETURN(h.descr, quoted());
        has_descr = true;
      } else if (key == "fortran_order") {
        skip_ws();
        if (s_.compare(pos_, 4, "True") == 0) h.fortran_order = true, pos_ += 4;
        else if (s_.compare(pos_, 5, "False") == 0) pos_ += 5;
        else return bad("'fortran_order' is not True or False");
        has_order = true;
      } else if (key == "shape") {
        SPINDLE_RETURN_IF_ERROR(shape(h.shape));
        has_shape = true;
      } else {
        return bad(fmt::format("unexpected key '{}' (expected 'descr', 'fortran_order' and 'shape')", key));
      }
      if (!peek('}')) SPINDLE_RETURN_IF_ERROR(expect(','));
    }
    ++pos_;
    skip_ws();
    if (pos_ != s_.size()) return bad("text after the closing '}'");
    if (!has_descr || !has_order || !has_shape) return bad("'descr', 'fortran_order' or 'shape' is missing");
    return h;
  }

 private:
  Status bad(const std::string& what) const {
    std::string shown = s_.substr(0, 200);
    while (!shown.empty() && std::isspace(static_cast<unsigned char>(shown.back()))) shown.pop_back();
    return invalid_argument(fmt::format("{}: malformed .npy header ({}): {}", where_, what, shown));
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t')) ++pos_;
  }
  bool peek(char c) {
    skip_ws();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  Status expect(char c) {
    if (!peek(c)) return bad(fmt::format("expected '{}' at offset {}", c, pos_));
    ++pos_;
    return Status::ok();
  }
  Result<std::string> quoted() {
    skip_ws();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) return bad(fmt::format("expected a quoted string at offset {}", pos_));
    const size_t end = s_.find(s_[pos_], pos_ + 1);
    if (end == std::string::npos) return bad("unterminated string");
    std::string v = s_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    return v;
  }
  // (d0, d1, ...) of non-negative decimal integers; (n,) for rank 1, () for a scalar.
  Status shape(Shape& out) {
    SPINDLE_RETURN_IF_ERROR(expect('('));
    while (!peek(')')) {
      const char* begin = s_.data() + pos_;
      int64_t d = 0;
      const auto [end, ec] = std::from_chars(begin, s_.data() + s_.size(), d);
      if (ec == std::errc::result_out_of_range) return bad(fmt::format("dimension {} is too large", std::string(begin, std::min<size_t>(end - begin, 40))));
      if (ec != std::errc() || *begin == '-' || *begin == '+') return bad(fmt::format("'shape' holds something other than non-negative integers at offset {}", pos_));
      out.push_back(d);
      pos_ += static_cast<size_t>(end - begin);
      if (!peek(')')) SPINDLE_RETURN_IF_ERROR(expect(','));
    }
    ++pos_;
    return Status::ok();
  }

  const std::string& s_;
  const std::string& where_;
  size_t pos_ = 0;
};

// UTF-8 <-> UTF-32LE (numpy's unicode dtype) through glibc's iconv.
Result<std::string> convert(const std::string& in, const char* from, const char* to, const std::string& where) {
  iconv_t cd = iconv_open(to, from);
  if (cd == reinterpret_cast<iconv_t>(-1)) return runtime_error(fmt::format("{}: iconv cannot convert {} to {}", where, from, to));
  std::string out(in.size() * 4 + 4, '\0');
  char* src = const_cast<char*>(in.data());
  size_t src_left = in.size();
  char* dst = out.data();
  size_t dst_left = out.size();
  const size_t r = iconv(cd, &src, &src_left, &dst, &dst_left);
  iconv_close(cd);
  if (r == static_cast<size_t>(-1))
    return invalid_argument(fmt::format("{}: a string is not valid {} text", where, from));
  out.resize(out.size() - dst_left);
  return out;
}

}  // namespace

Result<Tensor> read_npy(const std::filesystem::path& path) {
  // A regular file (checked on the opened descriptor); every read below is
  // checked against its size, so no header can make it read past the end.
  SPINDLE_ASSIGN_OR_RETURN(RegularFile in, RegularFile::open(path, ".npy file"));
  const std::string where = path.string();
  const uint64_t file_size = in.size();
  char magic[8] = {};
  if (file_size < 8 || !in.read_at(0, magic, 8).is_ok() || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    return invalid_argument(fmt::format("{}: not a .npy file (expected the \\x93NUMPY magic)", where));
  const int major = static_cast<unsigned char>(magic[6]);
  // Version 1.0: a 2-byte header length; 2.0 and 3.0 (a UTF-8 header): 4 bytes.
  uint32_t header_len = 0;
  size_t prefix = 10;
  unsigned char b[4] = {};
  if (major == 1) {
    if (file_size < 10 || !in.read_at(8, b, 2).is_ok()) return invalid_argument(fmt::format("{}: truncated .npy header", where));
    header_len = b[0] | (b[1] << 8);
  } else if (major == 2 || major == 3) {
    if (file_size < 12 || !in.read_at(8, b, 4).is_ok()) return invalid_argument(fmt::format("{}: truncated .npy header", where));
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
    prefix = 12;
  } else {
    return invalid_argument(fmt::format("{}: .npy format version {} is not supported (expected 1, 2 or 3)", where, major));
  }
  if (header_len > kMaxHeaderBytes)
    return invalid_argument(fmt::format("{}: .npy header of {} bytes, more than the {} spindle reads", where, header_len,
                                        kMaxHeaderBytes));
  if (prefix + header_len > file_size) return invalid_argument(fmt::format("{}: truncated .npy header", where));
  std::string header(header_len, '\0');
  SPINDLE_RETURN_IF_ERROR(in.read_at(prefix, header.data(), header_len));

  SPINDLE_ASSIGN_OR_RETURN(Header h, HeaderParser(header, where).parse());
  if (h.fortran_order) return unsupported(fmt::format("{}: Fortran-order arrays are not supported (save with C order)", where));
  std::string descr = h.descr;
  // numpy's unicode strings: '<U<n>', n UTF-32 code units per element.
  int64_t chars = -1;
  if ((descr.starts_with("<U") || descr.starts_with("=U")) && descr.size() > 2) {
    const auto [end, err] = std::from_chars(descr.data() + 2, descr.data() + descr.size(), chars);
    if (err != std::errc() || end != descr.data() + descr.size() || chars < 0 || chars > (1 << 24))
      return invalid_argument(fmt::format("{}: element type '{}' has a bad string length", where, descr));
  }
  DataType dtype = chars >= 0 ? DataType::kString : DataType::kUndefined;
  if (descr == "=f4" || descr == "f4") descr = "<f4";
  if (descr == "|V2") descr = "<V2";
  for (const Descr& d : kDescrs)
    if (descr == d.code || (descr.size() == 3 && descr[0] == '=' && descr.substr(1) == std::string(d.code).substr(1)))
      dtype = d.dtype;
  if (dtype == DataType::kUndefined)
    return unsupported(fmt::format("{}: element type '{}' is not supported (expected little-endian numeric, bool, "
                                   "unicode '<U' or '<V2' for bfloat16)",
                                   where, descr));
  // The sizes the header claims, against what the file holds, before allocating.
  const std::optional<int64_t> numel = checked_numel(h.shape);
  const size_t elem = chars >= 0 ? static_cast<size_t>(chars) * 4 : dtype_size(dtype);
  const std::optional<int64_t> bytes = numel ? checked_mul(*numel, static_cast<int64_t>(elem)) : std::nullopt;
  const uintmax_t present = file_size - prefix - header_len;
  if (!bytes)
    return invalid_argument(fmt::format("{}: shape ({}) overflows 64 bits", where, fmt::join(h.shape, ", ")));
  if (static_cast<uintmax_t>(*bytes) != present)
    return invalid_argument(fmt::format("{}: holds {} bytes of data, expected {} for {} {}", where, present, *bytes,
                                        descr, shape_to_string(h.shape)));
  // Strings of no width take no bytes, so the file would not bound how many
  // a shape claims (a 128-byte file claimed 5 million); numpy writes at
  // least one code unit per string ('<U1' for empty ones).
  if (chars == 0 && *numel > 0)
    return invalid_argument(fmt::format("{}: element type '{}' holds {} strings of no width, expected a string length "
                                        "of at least 1 (numpy writes '<U1' for empty strings)",
                                        where, descr, *numel));
  if (dtype != DataType::kString) {
    Tensor t(dtype, h.shape);
    SPINDLE_RETURN_IF_ERROR(in.read_at(prefix + header_len, t.raw_mutable_data(), t.nbytes()));
    return t;
  }
  Tensor t(dtype, h.shape);
  std::string data(static_cast<size_t>(*bytes), '\0');
  SPINDLE_RETURN_IF_ERROR(in.read_at(prefix + header_len, data.data(), data.size()));
  std::string* out = t.mutable_data<std::string>();
  for (int64_t i = 0; i < *numel; ++i) {
    const std::string item = data.substr(static_cast<size_t>(i) * elem, elem);
    size_t used = elem;  // numpy pads with NUL code points
    while (used >= 4 && item.compare(used - 4, 4, std::string(4, '\0')) == 0) used -= 4;
    SPINDLE_ASSIGN_OR_RETURN(out[i], convert(item.substr(0, used), "UTF-32LE", "UTF-8", where));
  }
  return t;
}

Status write_npy(const std::filesystem::path& path, const Tensor& tensor) {
  if (!tensor.is_tensor())
    return unsupported(fmt::format("{}: cannot write the {} as .npy, which holds one tensor", path.string(), tensor.describe()));
  std::string code;
  std::string data;
  if (tensor.dtype() == DataType::kString) {
    // '<U<n>': every string as n UTF-32LE code units, n the longest.
    std::vector<std::string> utf32;
    size_t width = 1;
    const std::string* items = tensor.data<std::string>();
    for (int64_t i = 0; i < tensor.numel(); ++i) {
      SPINDLE_ASSIGN_OR_RETURN(std::string u, convert(items[i], "UTF-8", "UTF-32LE", path.string()));
      width = std::max(width, u.size() / 4);
      utf32.push_back(std::move(u));
    }
    code = fmt::format("<U{}", width);
    for (auto& u : utf32) {
      u.resize(width * 4, '\0');
      data += u;
    }
  } else {
    for (const Descr& d : kDescrs)
      if (d.dtype == tensor.dtype()) code = d.code;
    if (code.empty()) return unsupported(fmt::format("{}: cannot write {} as .npy", path.string(), tensor.describe()));
  }
  std::string shape = "(" + fmt::format("{}", fmt::join(tensor.shape(), ", ")) + (tensor.rank() == 1 ? ",)" : ")");
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", code, shape);
  // As numpy: format 1.0 (a 2-byte header length) while the padded header
  // fits in 65,535 bytes, else 2.0 (a 4-byte length), e.g. from rank ~22,000.
  auto padded = [](std::string h, size_t prefix) {
    h.append((64 - (prefix + h.size() + 1) % 64) % 64, ' ');
    h.push_back('\n');
    return h;
  };
  std::string v1 = padded(header, 10);
  const bool version2 = v1.size() > 0xffff;
  header = version2 ? padded(header, 12) : std::move(v1);
  if (header.size() > kMaxHeaderBytes)
    return unsupported(fmt::format("{}: cannot write {} as .npy: its header of {} bytes is longer than the {} spindle reads",
                                   path.string(), tensor.describe(), header.size(), kMaxHeaderBytes));
  std::ofstream out(path, std::ios::binary);
  if (!out) return not_found(fmt::format("{}: cannot create the file", path.string()));
  const size_t len = header.size();
  if (version2) {
    out.write("\x93NUMPY\x02\x00", 8);
    const char lb[4] = {static_cast<char>(len & 0xff), static_cast<char>((len >> 8) & 0xff),
                        static_cast<char>((len >> 16) & 0xff), static_cast<char>((len >> 24) & 0xff)};
    out.write(lb, 4);
  } else {
    out.write("\x93NUMPY\x01\x00", 8);
    const char lb[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
    out.write(lb, 2);
  }
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  if (tensor.dtype() == DataType::kString)
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
  else
    out.write(static_cast<const char*>(tensor.raw_data()), static_cast<std::streamsize>(tensor.nbytes()));
  if (!out) return runtime_error(fmt::format("{}: write failed", path.string()));
  return Status::ok();
}

Result<Tensor> read_tensor_file(const std::filesystem::path& path) {
  const std::string ext = path.extension().string();
  if (ext == ".npy") return read_npy(path);
  if (ext == ".pb") return read_tensor_pb(path);
  return invalid_argument(fmt::format("{}: unknown tensor file type '{}' (expected .npy or .pb)", path.string(), ext));
}

Result<Tensor> read_value_file(const std::filesystem::path& path, const TensorInfo& info) {
  if (path.extension() != ".pb" || (!info.is_sequence && !info.is_optional)) {
    if (info.is_sequence || info.is_optional)
      return invalid_argument(fmt::format("{}: input '{}' is {}; give it as a .pb file (an onnx {})", path.string(), info.name,
                                          info.is_optional ? "an optional" : "a sequence",
                                          info.is_optional ? "OptionalProto" : "SequenceProto"));
    SPINDLE_ASSIGN_OR_RETURN(Tensor t, read_tensor_file(path));
    return as_declared_bfloat16(std::move(t), static_cast<int32_t>(info.dtype));
  }
  onnx::TypeProto type;
  onnx::TypeProto* t = &type;
  if (info.is_optional) t = t->mutable_optional_type()->mutable_elem_type();
  if (info.is_sequence) t = t->mutable_sequence_type()->mutable_elem_type();
  t->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(info.dtype));
  return read_value_pb(path, type);
}

}  // namespace spindle::io
