// model_builder.h — builds small ONNX models in memory for session tests.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "spindle/tensor.h"

namespace spindle::testing {

class ModelBuilder {
 public:
  explicit ModelBuilder(int opset = 13) {
    model_.set_ir_version(8);
    model_.set_producer_name("spindle-tests");
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }
  // dims: -1 = dynamic ("N")
  ModelBuilder& input(const std::string& name, const std::vector<int64_t>& dims, int elem = onnx::TensorProto::FLOAT) {
    value_info(model_.mutable_graph()->add_input(), name, dims, elem);
    return *this;
  }
  ModelBuilder& output(const std::string& name, const std::vector<int64_t>& dims, int elem = onnx::TensorProto::FLOAT) {
    value_info(model_.mutable_graph()->add_output(), name, dims, elem);
    return *this;
  }
  ModelBuilder& initializer(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& values) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return *this;
  }
  ModelBuilder& initializer_i64(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& values) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : values) t->add_int64_data(v);
    return *this;
  }
  ModelBuilder& initializer_u8(const std::string& name, const std::vector<int64_t>& dims, const std::vector<uint8_t>& values) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::UINT8);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(std::string(values.begin(), values.end()));
    return *this;
  }
  ModelBuilder& initializer_i8(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int8_t>& values) {
    initializer_u8(name, dims, std::vector<uint8_t>(values.begin(), values.end()));
    model_.mutable_graph()->mutable_initializer()->rbegin()->set_data_type(onnx::TensorProto::INT8);
    return *this;
  }
  // Imports another operator domain (com.microsoft, ...).
  ModelBuilder& opset(const std::string& domain, int version) {
    auto* op = model_.add_opset_import();
    op->set_domain(domain);
    op->set_version(version);
    return *this;
  }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                        const std::string& name = "") {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + std::to_string(model_.graph().node_size()) : name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return *n;
  }
  static void attr_float(onnx::NodeProto& n, const std::string& name, float v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void attr_int(onnx::NodeProto& n, const std::string& name, int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr_string(onnx::NodeProto& n, const std::string& name, const std::string& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  static void attr_ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  // A graph-valued attribute (If branches, Loop / Scan bodies): the graph
  // of another builder.
  static void attr_graph(onnx::NodeProto& n, const std::string& name, const ModelBuilder& sub) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = sub.model_.graph();
  }
  std::vector<uint8_t> bytes() const {
    std::string s = model_.SerializeAsString();
    return {s.begin(), s.end()};
  }
  onnx::ModelProto& proto() { return model_; }

 private:
  static void value_info(onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& dims, int elem) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    auto* shape = tt->mutable_shape();
    for (int64_t d : dims) {
      auto* dim = shape->add_dim();
      if (d >= 0) dim->set_dim_value(d);
      else dim->set_dim_param("N");
    }
  }
  onnx::ModelProto model_;
};

}  // namespace spindle::testing
