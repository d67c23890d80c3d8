// kernel_errors.h — checks the error a kernel throws for bad inputs (and
// the spindle-domain nodes such tests run).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/kernel.h"

namespace spindle::testing {

// A node of the spindle domain (opset 1): the kernels the optimizer's
// layout passes create.
inline kernels::NodeInfo spindle_node(const std::string& op, Attributes attrs, int num_inputs) {
  kernels::NodeInfo node;
  node.op_type = op;
  node.domain = "spindle";
  node.opset = 1;
  node.attrs = std::move(attrs);
  node.num_inputs = num_inputs;
  return node;
}

// The message of the spindle::Error that fn throws ("<no error>" when it
// returns); its code goes to *code when given.
inline std::string error_of(const std::function<void()>& fn, StatusCode* code = nullptr) {
  try {
    fn();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "<no error>";
}

// Runs op once and expects a spindle::Error whose message contains every
// needle (the op name, the input, what was expected...).
inline void expect_error(const std::string& op, int opset, Attributes attrs, std::vector<Tensor> inputs,
                         const std::vector<std::string>& needles, int num_outputs = 1) {
  try {
    kernels::run_kernel_once(op, opset, std::move(attrs), std::move(inputs), num_outputs);
    ADD_FAILURE() << op << ": expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const std::string& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
  }
}

}  // namespace spindle::testing
