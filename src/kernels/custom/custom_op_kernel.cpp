// custom_op_kernel.cpp — application-defined operators run as kernels.
#include "kernels/custom/custom_op_kernel.h"

#include <algorithm>
#include <type_traits>
#include <variant>

#include <fmt/format.h>

namespace spindle::kernels {

std::shared_ptr<const CustomOp> find_custom_op(const CustomOpDomains* ops, const std::string& domain,
                                               const std::string& op_type, int opset) {
  if (!ops) return nullptr;
  for (const auto& d : *ops) {
    if (!d) continue;
    const std::string name = d->name == "ai.onnx" ? "" : d->name;
    if (name != domain) continue;
    for (const auto& op : d->ops)
      if (op && op->name() == op_type && opset >= op->since_version() && opset <= op->end_version()) return op;
  }
  return nullptr;
}

DataType declared_type(const std::vector<DataType>& types, size_t i) {
  if (types.empty()) return DataType::kUndefined;
  return types[std::min(i, types.size() - 1)];
}

std::vector<DataType> inferred_output_types(const CustomOp& op, const CustomKernelInfo& node,
                                            std::vector<DataType> declared) {
  const auto* inference = dynamic_cast<const CustomTypeInference*>(&op);
  if (!inference || std::none_of(declared.begin(), declared.end(), [](DataType t) { return t == DataType::kUndefined; }))
    return declared;
  std::vector<DataType> inferred;
  try {
    inferred = inference->infer_output_types(node);
  } catch (const Error&) {
    return declared;  // as ONNX Runtime: the op's refusal leaves the types to the model
  }
  for (size_t o = 0; o < declared.size() && o < inferred.size(); ++o)
    if (declared[o] == DataType::kUndefined) declared[o] = inferred[o];
  return declared;
}

std::map<std::string, CustomAttribute> custom_attributes(const Attributes& attrs) {
  std::map<std::string, CustomAttribute> out;
  for (const auto& entry : attrs.all()) {
    const std::string& name = entry.first;  // a plain reference: lambdas may not capture structured bindings (clang)
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_constructible_v<CustomAttribute, V> && !std::is_same_v<V, GraphAttr>)
            out.emplace(name, CustomAttribute(v));
        },
        entry.second);
  }
  return out;
}

namespace {

class Context final : public CustomKernelContext {
 public:
  explicit Context(KernelContext& ctx) : ctx_(ctx) {}
  size_t num_inputs() const override { return static_cast<size_t>(ctx_.num_inputs()); }
  size_t num_outputs() const override { return static_cast<size_t>(ctx_.num_outputs()); }
  const Tensor* input(size_t i) const override {
    if (i >= num_inputs() || !ctx_.has_input(static_cast<int>(i))) return nullptr;
    return &ctx_.value_input(static_cast<int>(i));
  }
  Tensor& output(size_t i, DataType dtype, const Shape& shape) override {
    if (i >= num_outputs())
      fail(ctx_.node(), fmt::format("output index {} is out of range; the node has {} outputs", i, num_outputs()));
    for (int64_t d : shape)
      if (d < 0) fail(ctx_.node(), fmt::format("output {}: dimension {} is negative", i, d));
    return ctx_.output(static_cast<int>(i), dtype, shape);
  }
  ThreadPool* intra_op_pool() const override { return ctx_.pool(); }

 private:
  KernelContext& ctx_;
};

class CustomOpKernel final : public OpKernel {
 public:
  CustomOpKernel(std::shared_ptr<const CustomOp> op, const NodeInfo& node, CustomKernelInfo info)
      : op_(std::move(op)), input_types_(op_->input_types()), kernel_(op_->create_kernel(info)) {
    if (!kernel_) fail(node, "the custom op created no kernel");
  }
  void compute(KernelContext& ctx) const override {
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const DataType want = declared_type(input_types_, static_cast<size_t>(i));
      if (want == DataType::kUndefined || !ctx.has_input(i)) continue;
      const DataType got = ctx.value_input(i).dtype();
      if (got != want)
        fail(ctx.node(), fmt::format("input {} is {}, expected {} (the custom op's declared type)", i, dtype_name(got),
                                     dtype_name(want)));
    }
    Context c(ctx);
    try {
      kernel_->compute(c);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw Error(StatusCode::kRuntimeError, fmt::format("{}: {}", ctx.node().label(), e.what()));
    }
  }

 private:
  std::shared_ptr<const CustomOp> op_;  // keeps the op (and what it lives in) alive as long as its kernel
  std::vector<DataType> input_types_;
  std::unique_ptr<CustomKernel> kernel_;
};

}  // namespace

std::unique_ptr<OpKernel> make_custom_kernel(std::shared_ptr<const CustomOp> op, const NodeInfo& node,
                                             CustomKernelInfo info) {
  return std::make_unique<CustomOpKernel>(std::move(op), node, std::move(info));
}

}  // namespace spindle::kernels
