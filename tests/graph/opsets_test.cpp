// opsets_test.cpp — spindle's own operator validation (kernels/op_schema.h,
// graph/node_check.h), opset resolution for opsets 18-23 and model-local
// functions inlined at load (graph/functions.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../session/model_builder.h"
#include "graph/graph.h"
#include "kernels/kernel.h"
#include "kernels/op_schema.h"
#include "spindle/session.h"

namespace spindle {
namespace {

using ::testing::HasSubstr;
using testing::ModelBuilder;

Status load(const ModelBuilder& b) {
  const auto bytes = b.bytes();
  auto g = graph::load_model_bytes(bytes, "m.onnx", {}, {});
  return g.is_ok() ? Status::ok() : g.status();
}

std::vector<float> run_one(const ModelBuilder& b, const std::vector<float>& x, const std::vector<int64_t>& shape) {
  auto s = InferenceSession::create_from_bytes(b.bytes());
  return s->run({{"x", Tensor::from_vector<float>(shape, x)}})[0].to_vector<float>();
}

TEST(OpSchema, ResolvesTheNewestVersionAtOrBelowTheImport) {
  ASSERT_NE(kernels::find_schema("Pad", 20), nullptr);
  EXPECT_EQ(kernels::find_schema("Pad", 20)->since_version, 19);
  EXPECT_EQ(kernels::find_schema("Relu", 23)->since_version, 14);
  EXPECT_EQ(kernels::find_schema("Gelu", 19), nullptr);
  EXPECT_EQ(kernels::first_opset("Gelu"), 20);
  EXPECT_EQ(kernels::find_schema("NoSuchOp", 23), nullptr);
}

TEST(OpsetResolution, LaterOpsetsRunOnTheKernelOfTheirVersion) {
  const auto& r = kernels::KernelRegistry::global();
  for (int opset = 18; opset <= kernels::kMaxOpset; ++opset) {
    EXPECT_NE(r.find("", "Relu", opset), nullptr) << opset;           // Relu-14, unchanged
    EXPECT_NE(r.find("", "Conv", opset), nullptr) << opset;           // Conv-22 widens types only
    EXPECT_NE(r.find("", "ReduceMean", opset), nullptr) << opset;     // ReduceMean-18: axes input
    EXPECT_NE(r.find("", "Split", opset), nullptr) << opset;          // Split-18: num_outputs
  }
  EXPECT_NE(r.find("", "Gelu", 23), nullptr);  // Gelu-20's kernel
  EXPECT_EQ(r.find("", "Gelu", 19), nullptr);
  EXPECT_EQ(r.find("", "Relu", kernels::kMaxOpset + 1), nullptr);
}

TEST(OpsetResolution, Opset21ModelLoadsAndRuns) {
  ModelBuilder b(21);
  b.input("x", {4}).output("y", {4});
  b.node("Relu", {"x"}, {"y"});
  EXPECT_EQ(run_one(b, {-1, 2, -3, 4}, {4}), (std::vector<float>{0, 2, 0, 4}));
}

TEST(OpsetResolution, ReduceMeanWithAxesInputAtOpset18) {
  ModelBuilder b(18);
  b.input("x", {2, 3}).output("y", {2, 1});
  b.initializer_i64("axes", {1}, {1});
  b.node("ReduceMean", {"x", "axes"}, {"y"});
  EXPECT_EQ(run_one(b, {1, 2, 3, 4, 5, 6}, {2, 3}), (std::vector<float>{2, 5}));
}

TEST(OpsetResolution, DefaultDomainOpsetsPastTheNewestKnownAreRefusedByName) {
  ModelBuilder b(kernels::kMaxOpset + 1);
  b.input("x", {4}).output("y", {4});
  b.node("Relu", {"x"}, {"y"});
  Status s = load(b);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("imports opset 24 of the default ONNX domain; spindle supports opsets 1 to 23"));
}

TEST(NodeCheck, ArityIsCheckedAgainstTheVersionTheOpsetSelects) {
  ModelBuilder b(21);
  b.input("x", {4}).output("y", {4});
  b.node("Relu", {"x", "x"}, {"y"}, "r");
  Status s = load(b);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("node Relu 'r' (Relu-14, selected by the model's opset 21) has 2 input(s), expected 1"));
  ModelBuilder p(19);
  p.input("x", {4}).output("y", {4});
  p.node("Pad", {"x"}, {"y"}, "p");
  EXPECT_THAT(load(p).message(), HasSubstr("(Pad-19, selected by the model's opset 19) has 1 input(s), expected 2 to 4"));
}

TEST(NodeCheck, AttributesAreCheckedByNameTypeAndPresence) {
  {
    ModelBuilder b(18);
    b.input("x", {4}).output("y", {4});
    ModelBuilder::attr_int(b.node("Relu", {"x"}, {"y"}, "r"), "alpha", 1);
    EXPECT_THAT(load(b).message(), HasSubstr("has the attribute 'alpha', which Relu-14 does not define (it has no attributes)"));
  }
  {
    ModelBuilder b(18);
    b.input("x", {2, 4}).output("y", {2, 4});
    ModelBuilder::attr_float(b.node("Softmax", {"x"}, {"y"}, "s"), "axis", 1.0f);
    EXPECT_THAT(load(b).message(), HasSubstr("attribute 'axis' is of type float, expected int"));
  }
  {
    ModelBuilder b(20);
    b.input("x", {4}).output("y", {4});
    b.node("BitShift", {"x", "x"}, {"y"}, "b");
    EXPECT_THAT(load(b).message(), HasSubstr("lacks the required attribute 'direction' (string)"));
  }
}

TEST(NodeCheck, UnsupportedOperatorsAreStillListedTogether) {
  ModelBuilder b(23);
  b.input("x", {4}).output("y", {4});
  b.node("ImageDecoder", {"x"}, {"a"});
  b.node("Relu", {"a"}, {"c"});
  b.node("StringSplit", {"c"}, {"y", "z"});
  Status s = load(b);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("2 operator(s) not supported by spindle: ImageDecoder (opset 23), StringSplit (opset 23)"));
}

// custom.ScaleAdd(x, y; alpha) = x * alpha + y, alpha a reference to the call's attribute.
onnx::FunctionProto scale_add_function() {
  onnx::FunctionProto f;
  f.set_name("ScaleAdd");
  f.set_domain("custom");
  f.add_input("x");
  f.add_input("y");
  f.add_output("z");
  f.add_attribute("alpha");
  auto* op = f.add_opset_import();
  op->set_domain("");
  op->set_version(18);
  auto* c = f.add_node();
  c->set_op_type("Constant");
  c->add_output("a");
  auto* ref = c->add_attribute();
  ref->set_name("value_float");
  ref->set_type(onnx::AttributeProto::FLOAT);
  ref->set_ref_attr_name("alpha");
  auto* mul = f.add_node();
  mul->set_op_type("Mul");
  mul->add_input("x");
  mul->add_input("a");
  mul->add_output("t");
  auto* add = f.add_node();
  add->set_op_type("Add");
  add->add_input("t");
  add->add_input("y");
  add->add_output("z");
  return f;
}

ModelBuilder function_model(const onnx::FunctionProto& f, float alpha) {
  ModelBuilder b(18);
  b.input("x", {3}).output("y", {3});
  auto* d = b.proto().add_opset_import();
  d->set_domain("custom");
  d->set_version(1);
  auto& call = b.node("ScaleAdd", {"x", "x"}, {"y"}, "call");
  call.set_domain("custom");
  ModelBuilder::attr_float(call, "alpha", alpha);
  *b.proto().add_functions() = f;
  return b;
}

TEST(Functions, ModelLocalFunctionsAreInlinedWithAttributeReferences) {
  ModelBuilder b = function_model(scale_add_function(), 2.0f);
  EXPECT_EQ(run_one(b, {1, 2, 3}, {3}), (std::vector<float>{3, 6, 9}));  // x * 2 + x
}

TEST(Functions, AttributeDefaultsOfIrVersion9AreUsed) {
  onnx::FunctionProto f = scale_add_function();
  // attribute_proto (field 11): alpha = 4 by default; Debian's libonnx
  // schema lacks the field, so it is written as an unknown field.
  onnx::AttributeProto def;
  def.set_name("alpha");
  def.set_type(onnx::AttributeProto::FLOAT);
  def.set_f(4.0f);
  f.mutable_unknown_fields()->AddLengthDelimited(11, def.SerializeAsString());
  ModelBuilder b = function_model(f, 0.0f);
  b.proto().mutable_graph()->mutable_node(0)->clear_attribute();
  EXPECT_EQ(run_one(b, {1, 2, 3}, {3}), (std::vector<float>{5, 10, 15}));  // x * 4 + x
}

TEST(Functions, RecursionIsAnError) {
  onnx::FunctionProto f = scale_add_function();
  auto* self = f.add_node();
  self->set_op_type("ScaleAdd");
  self->set_domain("custom");
  self->add_input("z");
  self->add_input("z");
  self->add_output("w");
  ModelBuilder b = function_model(f, 1.0f);
  Status s = load(b);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("function 'ScaleAdd' calls itself"));
}

TEST(Functions, AReferenceOutsideAFunctionIsAnError) {
  ModelBuilder b(18);
  b.input("x", {3}).output("y", {3});
  auto& n = b.node("LeakyRelu", {"x"}, {"y"}, "l");
  ModelBuilder::attr_float(n, "alpha", 0.1f);
  n.mutable_attribute(0)->set_ref_attr_name("slope");
  EXPECT_THAT(load(b).message(), HasSubstr("attribute 'alpha' refers to 'slope', which only a function body may do"));
}

}  // namespace
}  // namespace spindle
