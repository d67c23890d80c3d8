// custom_op_library.cpp — a custom-op library as ONNX Runtime's samples
// write one: built against the installed headers only (onnxruntime_cxx_api.h,
// the API table taken from the caller: ORT_API_MANUAL_INIT), exporting
// RegisterCustomOps, which adds the domain "test.domain" (custom_ops.h) to
// the session options it is given. Loaded by RegisterCustomOpsLibrary_V2
// (custom_op_test.c) and Python's SessionOptions.register_custom_ops_library.
#include <memory>
#include <mutex>
#include <vector>

#define ORT_API_MANUAL_INIT
#include <onnxruntime_cxx_api.h>
#undef ORT_API_MANUAL_INIT

#include "custom_ops.h"

namespace {
const test_ops::ScaledSumOp scaled_sum;
const test_ops::ParallelIdsOp parallel_ids;
const test_ops::FailIfOp fail_if;

// Domains live as long as the library: sessions refer to them.
std::mutex domains_mu;
std::vector<Ort::CustomOpDomain> domains;
}  // namespace

extern "C" OrtStatus* ORT_API_CALL RegisterCustomOps(OrtSessionOptions* options, const OrtApiBase* api_base) {
  Ort::InitApi(api_base->GetApi(ORT_API_VERSION));
  try {
    Ort::CustomOpDomain domain{"test.domain"};
    domain.Add(&scaled_sum);
    domain.Add(&parallel_ids);
    domain.Add(&fail_if);
    Ort::UnownedSessionOptions(options).Add(domain);
    std::lock_guard<std::mutex> lock(domains_mu);
    domains.push_back(std::move(domain));
  } catch (const Ort::Exception& e) {
    return test_ops::status_of(e);
  }
  return nullptr;
}
