// onnx_node_runner.h — runs one ONNX backend node test (Debian
// libonnx-testdata, data/node/<name>) through a single kernel and compares
// every output with the expected .pb files.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <fmt/format.h>

#include "graph/onnx_convert.h"
#include "io/tensor_proto.h"
#include "kernels/kernel.h"

namespace spindle::testing {

inline const std::filesystem::path kOnnxNodeTestDir = "/usr/share/libonnx-testdata/data/node";

// Compares two tensors: same dtype and shape; floats (float16/32/64,
// bfloat16 with rtol at least 2^-7) within atol + rtol*|b| (NaN equals NaN), everything else (strings included)
// exactly. The message names how many elements differ and the first one
// (index, got, expected). Sequences match when they have as many items and
// each pair matches; optionals when both are empty or both hold matching
// values.
inline ::testing::AssertionResult tensors_close(const Tensor& got, const Tensor& want, double rtol, double atol) {
  if (got.is_sequence() != want.is_sequence() || got.is_optional() != want.is_optional() ||
      got.dtype() != want.dtype() || got.shape() != want.shape())
    return ::testing::AssertionFailure() << "got " << got.describe() << ", expected " << want.describe();
  if (want.is_optional()) {
    const Tensor* g = got.optional_value();
    const Tensor* w = want.optional_value();
    if (!g || !w) {
      if (g || w) return ::testing::AssertionFailure() << "got " << got.describe() << ", expected " << want.describe();
      return ::testing::AssertionSuccess();
    }
    return tensors_close(*g, *w, rtol, atol);
  }
  if (want.is_sequence()) {
    const auto& g = got.sequence_items();
    const auto& w = want.sequence_items();
    if (g.size() != w.size()) return ::testing::AssertionFailure() << "got " << got.describe() << ", expected " << want.describe();
    for (size_t i = 0; i < w.size(); ++i) {
      auto r = tensors_close(g[i], w[i], rtol, atol);
      if (!r) return ::testing::AssertionFailure() << "sequence item " << i << ": " << r.message();
    }
    return ::testing::AssertionSuccess();
  }
  const int64_t n = want.numel();
  if (want.dtype() == DataType::kString) {
    const std::string* gs = got.data<std::string>();
    const std::string* ws = want.data<std::string>();
    int bad = 0;
    std::string first;
    for (int64_t i = 0; i < n; ++i)
      if (gs[i] != ws[i] && bad++ == 0) first = fmt::format("element {}: got \"{}\", expected \"{}\"", i, gs[i], ws[i]);
    if (bad) return ::testing::AssertionFailure() << bad << " of " << n << " strings differ; first " << first;
    return ::testing::AssertionSuccess();
  }
  auto at = [](const Tensor& t, int64_t i) -> double {
    const void* p = t.raw_data();
    switch (t.dtype()) {
      case DataType::kFloat32: return static_cast<const float*>(p)[i];
      case DataType::kFloat64: return static_cast<const double*>(p)[i];
      case DataType::kInt64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
      case DataType::kInt32: return static_cast<const int32_t*>(p)[i];
      case DataType::kInt16: return static_cast<const int16_t*>(p)[i];
      case DataType::kInt8: return static_cast<const int8_t*>(p)[i];
      case DataType::kUInt8: return static_cast<const uint8_t*>(p)[i];
      case DataType::kUInt16: return static_cast<const uint16_t*>(p)[i];
      case DataType::kUInt32: return static_cast<const uint32_t*>(p)[i];
      case DataType::kUInt64: return static_cast<double>(static_cast<const uint64_t*>(p)[i]);
      case DataType::kBool: return static_cast<const bool*>(p)[i];
      case DataType::kFloat16: return float16_to_float(static_cast<const uint16_t*>(p)[i]);
      case DataType::kBFloat16: return bfloat16_to_float(static_cast<const uint16_t*>(p)[i]);
      default: return NAN;
    }
  };
  const bool is_float = want.dtype() == DataType::kFloat32 || want.dtype() == DataType::kFloat64 ||
                        want.dtype() == DataType::kFloat16 || want.dtype() == DataType::kBFloat16;
  // bfloat16 holds 8 significant bits: values within one unit in the last
  // place (2^-7 relative) are equal at its precision. ONNX 1.12's expected
  // bfloat16 values truncate float32 where spindle (as ONNX Runtime and
  // later ONNX) rounds to nearest even.
  if (want.dtype() == DataType::kBFloat16) rtol = std::max(rtol, 1.0 / 128);
  // 64-bit integers are compared and shown as integers: a double holds only 53 bits.
  const bool wide_int = want.dtype() == DataType::kInt64 || want.dtype() == DataType::kUInt64;
  auto bits64 = [](const Tensor& t, int64_t i) { return static_cast<const uint64_t*>(t.raw_data())[i]; };
  auto show = [&](const Tensor& t, int64_t i) {
    if (t.dtype() == DataType::kInt64) return fmt::format("{}", static_cast<int64_t>(bits64(t, i)));
    if (t.dtype() == DataType::kUInt64) return fmt::format("{}", bits64(t, i));
    return fmt::format("{}", at(t, i));
  };
  int bad = 0;
  std::string first;
  for (int64_t i = 0; i < n; ++i) {
    const double g = at(got, i), w = at(want, i);
    bool ok;
    if (is_float) ok = (std::isnan(g) && std::isnan(w)) || g == w || std::fabs(g - w) <= atol + rtol * std::fabs(w);
    else if (wide_int) ok = bits64(got, i) == bits64(want, i);
    else ok = g == w;
    if (!ok && bad++ == 0) first = fmt::format("element {}: got {}, expected {}", i, show(got, i), show(want, i));
  }
  if (bad) return ::testing::AssertionFailure() << bad << " of " << n << " elements differ; first " << first;
  return ::testing::AssertionSuccess();
}

// Runs data/node/<name>: the model must hold one node; each
// test_data_set_* is run through run_kernel_once and compared.
inline ::testing::AssertionResult run_onnx_node_test(const std::string& name, double rtol = 1e-3, double atol = 1e-5,
                                                      ThreadPool* pool = nullptr) {
  const auto dir = kOnnxNodeTestDir / name;
  std::ifstream in(dir / "model.onnx", std::ios::binary);
  if (!in) return ::testing::AssertionFailure() << "no ONNX node test " << dir;
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&in)) return ::testing::AssertionFailure() << "cannot parse " << dir / "model.onnx";
  const onnx::GraphProto& g = model.graph();
  if (g.node_size() != 1) return ::testing::AssertionFailure() << name << " has " << g.node_size() << " nodes, expected 1";
  const onnx::NodeProto& proto = g.node(0);
  kernels::NodeInfo node;
  node.op_type = proto.op_type();
  node.domain = proto.domain() == "ai.onnx" ? "" : proto.domain();
  for (const auto& op : model.opset_import())
    if ((op.domain().empty() || op.domain() == "ai.onnx") == node.domain.empty() &&
        (node.domain.empty() || op.domain() == node.domain))
      node.opset = static_cast<int>(op.version());
  node.name = proto.name();
  auto attrs = graph::attributes_from_proto(proto, dir);
  if (!attrs.is_ok()) return ::testing::AssertionFailure() << attrs.status().to_string();
  node.attrs = std::move(attrs).value();
  node.num_inputs = proto.input_size();
  node.num_outputs = proto.output_size();
  int sets = 0;
  for (int s = 0; std::filesystem::exists(dir / fmt::format("test_data_set_{}", s)); ++s, ++sets) {
    const auto set_dir = dir / fmt::format("test_data_set_{}", s);
    std::map<std::string, Tensor> values;
    for (const auto& init : g.initializer()) values[init.name()] = io::tensor_from_proto(init, dir).value();
    for (int i = 0; std::filesystem::exists(set_dir / fmt::format("input_{}.pb", i)); ++i) {
      auto t = io::read_value_pb(set_dir / fmt::format("input_{}.pb", i), g.input(i).type());
      if (!t.is_ok()) return ::testing::AssertionFailure() << t.status().to_string();
      values[g.input(i).name()] = std::move(t).value();
    }
    std::vector<Tensor> inputs;
    for (const auto& in_name : proto.input()) inputs.push_back(in_name.empty() ? Tensor() : values[in_name]);
    std::vector<Tensor> outputs;
    try {
      outputs = kernels::run_kernel_once(node, inputs, pool);
    } catch (const std::exception& e) {
      return ::testing::AssertionFailure() << name << ": " << e.what();
    }
    for (int o = 0; std::filesystem::exists(set_dir / fmt::format("output_{}.pb", o)); ++o) {
      auto want = io::read_value_pb(set_dir / fmt::format("output_{}.pb", o), g.output(o).type());
      if (!want.is_ok()) return ::testing::AssertionFailure() << want.status().to_string();
      int pos = -1;
      for (int k = 0; k < proto.output_size(); ++k)
        if (proto.output(k) == g.output(o).name()) pos = k;
      if (pos < 0 || pos >= static_cast<int>(outputs.size()))
        return ::testing::AssertionFailure() << name << ": output " << g.output(o).name() << " not produced";
      auto r = tensors_close(outputs[static_cast<size_t>(pos)], want.value(), rtol, atol);
      if (!r) return ::testing::AssertionFailure() << name << " set " << s << " output " << g.output(o).name() << ": " << r.message();
    }
  }
  if (sets == 0) return ::testing::AssertionFailure() << name << " has no test_data_set_*";
  return ::testing::AssertionSuccess();
}

}  // namespace spindle::testing

// The parameterised suite `Prefix`/`Fixture` over an array of ONNX backend
// node test names ("test_..."): each test runs inline and again with a pool
// of 3 threads, so kernels that split work across blocks are checked both
// ways. Test names drop the "test_" prefix.
#define SPINDLE_ONNX_NODE_TEST_SUITE(Prefix, Fixture, names)                                         \
  class Fixture : public ::testing::TestWithParam<const char*> {};                                   \
  TEST_P(Fixture, MatchesOnnxReference) { EXPECT_TRUE(::spindle::testing::run_onnx_node_test(GetParam())); } \
  TEST_P(Fixture, MatchesOnnxReferenceWithThreePoolThreads) {                                        \
    auto pool = ::spindle::ThreadPool::create(::spindle::ThreadingOptions{.num_threads = 3}).value();  \
    EXPECT_TRUE(::spindle::testing::run_onnx_node_test(GetParam(), 1e-3, 1e-5, pool.get()));         \
  }                                                                                                  \
  INSTANTIATE_TEST_SUITE_P(Prefix, Fixture, ::testing::ValuesIn(names),                              \
                           [](const ::testing::TestParamInfo<const char*>& info) {                   \
                             return std::string(info.param).substr(5);                              \
                           })
