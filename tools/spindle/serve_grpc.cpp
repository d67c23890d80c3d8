// serve_grpc.cpp — inference.GRPCInferenceService for spindle serve (see
// serve_grpc.h): requests checked with the HTTP transport's checks
// (serve_protocol.h), run through the same queues (serve_models.h), refusals
// as gRPC status codes.
#include "serve_grpc.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <limits>
#include <mutex>
#include <set>

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>

#include "inference.grpc.pb.h"
#include "serve_protocol.h"
#include "spindle/version.h"

namespace spindle::cli::serve {
namespace {

using inference::InferTensorContents;

HttpError bad(const std::string& message) { return HttpError(400, "bad_request", message); }

grpc::StatusCode code_of(int http_status) {
  switch (http_status) {
    case 400: return grpc::StatusCode::INVALID_ARGUMENT;
    case 404: return grpc::StatusCode::NOT_FOUND;
    case 429: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case 499: return grpc::StatusCode::CANCELLED;
    case 504: return grpc::StatusCode::DEADLINE_EXCEEDED;
    default: return grpc::StatusCode::INTERNAL;
  }
}

// Runs a handler, turning its refusals into a gRPC status.
template <class F>
grpc::Status guarded(F&& fn) {
  try {
    fn();
    return grpc::Status::OK;
  } catch (const HttpError& e) {
    return grpc::Status(code_of(e.status), e.what());
  } catch (const Error& e) {
    return grpc::Status(
        e.code() == StatusCode::kNotFound ? grpc::StatusCode::NOT_FOUND : grpc::StatusCode::INVALID_ARGUMENT, e.what());
  } catch (const std::exception& e) {
    return grpc::Status(grpc::StatusCode::INTERNAL, e.what());
  }
}

// The typed contents fields, for messages: which one a datatype takes, and
// which ones a request filled.
struct Field {
  const char* name;
  int size;
};
std::vector<Field> fields_of(const InferTensorContents& c) {
  return {{"bool_contents", c.bool_contents_size()},     {"int_contents", c.int_contents_size()},
          {"int64_contents", c.int64_contents_size()},   {"uint_contents", c.uint_contents_size()},
          {"uint64_contents", c.uint64_contents_size()}, {"fp32_contents", c.fp32_contents_size()},
          {"fp64_contents", c.fp64_contents_size()},     {"bytes_contents", c.bytes_contents_size()}};
}

const char* field_for(DataType t) {
  switch (t) {
    case DataType::kBool: return "bool_contents";
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32: return "int_contents";
    case DataType::kInt64: return "int64_contents";
    case DataType::kUInt8:
    case DataType::kUInt16:
    case DataType::kUInt32: return "uint_contents";
    case DataType::kUInt64: return "uint64_contents";
    case DataType::kFloat32: return "fp32_contents";
    case DataType::kFloat64: return "fp64_contents";
    case DataType::kString: return "bytes_contents";
    default: return nullptr;  // FP16: raw contents only
  }
}

// Copies `src` into `t`, each element checked to fit T.
template <class T, class Src>
void copy_checked(Tensor& t, const Src& src, const std::string& input, const char* field) {
  T* out = t.mutable_data<T>();
  for (int i = 0; i < src.size(); ++i) {
    const auto v = src.Get(i);
    if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max())
      throw bad(fmt::format("input '{}': contents.{}[{}] is {}, out of range for {}", input, field, i, v,
                            datatype_text(t.dtype())));
    out[i] = static_cast<T>(v);
  }
}

template <class T, class Src>
void copy_plain(Tensor& t, const Src& src) {
  if (src.size()) std::copy(src.begin(), src.end(), t.mutable_data<T>());
}

Tensor tensor_from_contents(const TensorInfo& info, const Shape& shape, const InferTensorContents& c,
                            const std::string& input) {
  const char* field = field_for(info.dtype);
  if (!field)
    throw bad(fmt::format("input '{}': {} has no typed contents field; send it in raw_input_contents", input,
                          datatype_text(info.dtype)));
  int given = 0;
  for (const Field& f : fields_of(c)) {
    if (std::strcmp(f.name, field) == 0) given = f.size;
    else if (f.size)
      throw bad(fmt::format("input '{}': contents.{} is filled, but {} elements go in contents.{}", input, f.name,
                            datatype_text(info.dtype), field));
  }
  const int64_t numel = *checked_numel(shape);
  if (given != numel)
    throw bad(fmt::format("input '{}': contents.{} has {} elements but shape {} holds {}", input, field, given,
                          shape_text(shape), numel));
  Tensor t = new_input(info, shape, input);
  switch (info.dtype) {
    case DataType::kBool: {
      auto* out = static_cast<uint8_t*>(t.raw_mutable_data());
      for (int i = 0; i < given; ++i) out[i] = c.bool_contents(i) ? 1 : 0;
      break;
    }
    case DataType::kInt8: copy_checked<int8_t>(t, c.int_contents(), input, field); break;
    case DataType::kInt16: copy_checked<int16_t>(t, c.int_contents(), input, field); break;
    case DataType::kInt32: copy_plain<int32_t>(t, c.int_contents()); break;
    case DataType::kInt64: copy_plain<int64_t>(t, c.int64_contents()); break;
    case DataType::kUInt8: copy_checked<uint8_t>(t, c.uint_contents(), input, field); break;
    case DataType::kUInt16: copy_checked<uint16_t>(t, c.uint_contents(), input, field); break;
    case DataType::kUInt32: copy_plain<uint32_t>(t, c.uint_contents()); break;
    case DataType::kUInt64: copy_plain<uint64_t>(t, c.uint64_contents()); break;
    case DataType::kFloat32: copy_plain<float>(t, c.fp32_contents()); break;
    case DataType::kFloat64: copy_plain<double>(t, c.fp64_contents()); break;
    case DataType::kString: {
      auto* out = t.mutable_data<std::string>();
      for (int i = 0; i < given; ++i) out[i] = c.bytes_contents(i);
      break;
    }
    default: break;
  }
  return t;
}

// A contiguous output's elements into the field of its datatype (not FP16).
void fill_contents(const Tensor& t, InferTensorContents& c) {
  const int64_t n = t.numel();
  const void* p = t.raw_data();
  auto add = [&](auto* field, auto* data) { field->Add(data, data + n); };
  switch (t.dtype()) {
    case DataType::kBool:
      for (int64_t i = 0; i < n; ++i) c.add_bool_contents(static_cast<const uint8_t*>(p)[i] != 0);
      break;
    case DataType::kInt8: add(c.mutable_int_contents(), static_cast<const int8_t*>(p)); break;
    case DataType::kInt16: add(c.mutable_int_contents(), static_cast<const int16_t*>(p)); break;
    case DataType::kInt32: add(c.mutable_int_contents(), static_cast<const int32_t*>(p)); break;
    case DataType::kInt64: add(c.mutable_int64_contents(), static_cast<const int64_t*>(p)); break;
    case DataType::kUInt8: add(c.mutable_uint_contents(), static_cast<const uint8_t*>(p)); break;
    case DataType::kUInt16: add(c.mutable_uint_contents(), static_cast<const uint16_t*>(p)); break;
    case DataType::kUInt32: add(c.mutable_uint_contents(), static_cast<const uint32_t*>(p)); break;
    case DataType::kUInt64: add(c.mutable_uint64_contents(), static_cast<const uint64_t*>(p)); break;
    case DataType::kFloat32: add(c.mutable_fp32_contents(), static_cast<const float*>(p)); break;
    case DataType::kFloat64: add(c.mutable_fp64_contents(), static_cast<const double*>(p)); break;
    case DataType::kString:
      for (int64_t i = 0; i < n; ++i) c.add_bytes_contents(static_cast<const std::string*>(p)[i]);
      break;
    default: throw HttpError(500, "run_error", "output datatype " + dtype_name(t.dtype()) + " has no contents field");
  }
}

// The request parameter "timeout" (int64 microseconds), as over HTTP.
std::optional<int64_t> timeout_parameter(const inference::ModelInferRequest& req) {
  auto it = req.parameters().find("timeout");
  if (it == req.parameters().end()) return std::nullopt;
  if (it->second.parameter_choice_case() != inference::InferParameter::kInt64Param || it->second.int64_param() < 0)
    throw bad("parameter \"timeout\" must be a non-negative int64_param (microseconds)");
  if (it->second.int64_param() == 0) return std::nullopt;
  return it->second.int64_param();
}

void infer(ModelVersion& m, const inference::ModelInferRequest& req, inference::ModelInferResponse& res,
           grpc::ServerContext& ctx, Clock::time_point arrived) {
  const InferenceSession& s = m.session();
  const bool raw = req.raw_input_contents_size() > 0;
  if (raw && req.raw_input_contents_size() != req.inputs_size())
    throw bad(fmt::format("raw_input_contents has {} entries but the request has {} inputs; expected one per input, "
                          "in the order of inputs",
                          req.raw_input_contents_size(), req.inputs_size()));
  Feeds feeds;
  std::set<std::string> seen;
  for (int i = 0; i < req.inputs_size(); ++i) {
    const auto& in = req.inputs(i);
    const TensorInfo& info = check_input(in.name(), in.datatype(), s.inputs(), seen);
    const Shape shape(in.shape().begin(), in.shape().end());
    check_shape(shape, in.name(), info);
    if (raw) {
      if (in.has_contents())
        throw bad(fmt::format("input '{}' has contents but the request carries raw_input_contents; expected one or "
                              "the other for all inputs",
                              in.name()));
      feeds.emplace_back(in.name(), tensor_from_bytes(info, shape, req.raw_input_contents(i), in.name(),
                                                      fmt::format("the size of raw_input_contents[{}]", i)));
    } else {
      feeds.emplace_back(in.name(), tensor_from_contents(info, shape, in.contents(), in.name()));
    }
  }
  check_all_inputs(s.inputs(), seen);
  std::vector<std::string> outputs;
  for (const auto& o : req.outputs()) add_output(o.name(), s.outputs(), outputs);
  if (outputs.empty())
    for (const TensorInfo& t : s.outputs()) outputs.push_back(t.name);

  // The earlier of the "timeout" parameter and the call's own deadline.
  std::optional<Clock::time_point> deadline;
  int64_t timeout_us = 0;
  if (auto t = timeout_parameter(req)) {
    deadline = arrived + std::chrono::microseconds(*t);
    timeout_us = *t;
  }
  if (const auto d = ctx.deadline(); d != std::chrono::system_clock::time_point::max()) {
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(d - std::chrono::system_clock::now());
    const auto call_deadline = Clock::now() + left;
    if (!deadline || call_deadline < *deadline) {
      deadline = call_deadline;
      timeout_us = std::chrono::duration_cast<std::chrono::microseconds>(call_deadline - arrived).count();
    }
  }
  // gRPC also marks a call cancelled when its deadline passes: that is the
  // request's timeout (504 / DEADLINE_EXCEEDED, counted so), not the client leaving.
  const auto abandoned = [&ctx] {
    return ctx.IsCancelled() && std::chrono::system_clock::now() < ctx.deadline();
  };
  const std::vector<Tensor> values = run_request(m, std::move(feeds), outputs, deadline, timeout_us, abandoned);

  res.set_model_name(m.name());
  res.set_model_version(m.version());
  res.set_id(req.id());
  // Raw outputs answer raw inputs; typed inputs get typed outputs unless an
  // output is FP16 (no typed field; the two forms cannot be mixed).
  bool raw_out = raw;
  for (const Tensor& v : values) raw_out = raw_out || (v.is_tensor() && v.dtype() == DataType::kFloat16);
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string datatype = output_datatype(values[i], outputs[i]);
    const Tensor c = values[i].is_contiguous() ? values[i] : values[i].clone();
    auto* o = res.add_outputs();
    o->set_name(outputs[i]);
    o->set_datatype(datatype);
    for (int64_t d : c.shape()) o->add_shape(d);
    if (raw_out) append_bytes(*res.add_raw_output_contents(), c);
    else fill_contents(c, *o->mutable_contents());
  }
}

void tensor_metadata(const std::vector<TensorInfo>& infos,
                     google::protobuf::RepeatedPtrField<inference::ModelMetadataResponse::TensorMetadata>& out) {
  for (const TensorInfo& t : infos) {
    auto* m = out.Add();
    m->set_name(t.name);
    m->set_datatype(datatype_text(t.dtype));
    for (int64_t d : t.shape) m->add_shape(d < 0 ? -1 : d);
  }
}

class Service final : public inference::GRPCInferenceService::Service {
 public:
  Service(Repository& repo, const std::atomic<bool>& draining) : repo_(repo), draining_(draining) {}

  grpc::Status ServerLive(grpc::ServerContext*, const inference::ServerLiveRequest*,
                          inference::ServerLiveResponse* res) override {
    res->set_live(true);
    return grpc::Status::OK;
  }

  grpc::Status ServerReady(grpc::ServerContext*, const inference::ServerReadyRequest*,
                           inference::ServerReadyResponse* res) override {
    res->set_ready(!draining_ && repo_.all_ready());
    return grpc::Status::OK;
  }

  grpc::Status ModelReady(grpc::ServerContext*, const inference::ModelReadyRequest* req,
                          inference::ModelReadyResponse* res) override {
    return guarded([&] {
      find_model(repo_, req->name(), req->version());
      res->set_ready(!draining_);
    });
  }

  grpc::Status ServerMetadata(grpc::ServerContext*, const inference::ServerMetadataRequest*,
                              inference::ServerMetadataResponse* res) override {
    res->set_name("spindle");
    res->set_version(version());
    for (const std::string& e : server_extensions()) res->add_extensions(e);
    return grpc::Status::OK;
  }

  grpc::Status ModelMetadata(grpc::ServerContext*, const inference::ModelMetadataRequest* req,
                             inference::ModelMetadataResponse* res) override {
    return guarded([&] {
      auto m = find_model(repo_, req->name(), req->version());
      res->set_name(m->name());
      if (req->version().empty())
        for (const std::string& v : repo_.versions(m->name())) res->add_versions(v);
      else
        res->add_versions(m->version());
      res->set_platform("onnx");
      tensor_metadata(m->session().inputs(), *res->mutable_inputs());
      tensor_metadata(m->session().outputs(), *res->mutable_outputs());
    });
  }

  grpc::Status ModelInfer(grpc::ServerContext* ctx, const inference::ModelInferRequest* req,
                          inference::ModelInferResponse* res) override {
    const Clock::time_point arrived = Clock::now();
    std::shared_ptr<ModelVersion> m;
    if (grpc::Status st = guarded([&] { m = find_model(repo_, req->model_name(), req->model_version()); }); !st.ok())
      return st;
    return guarded([&] { count_request(m->metrics(), arrived, [&] { infer(*m, *req, *res, *ctx, arrived); }); });
  }

 private:
  Repository& repo_;
  const std::atomic<bool>& draining_;
};

}  // namespace

struct GrpcServer::Impl {
  Impl(Repository& repo, const std::atomic<bool>& draining) : service(repo, draining) {}
  Service service;
  std::unique_ptr<grpc::Server> server;
  std::once_flag stopped;
};

GrpcServer::GrpcServer(Repository& repo, const std::atomic<bool>& draining, const std::string& host, int port,
                       int threads, int64_t max_message_bytes)
    : impl_(std::make_unique<Impl>(repo, draining)) {
  const std::string address =
      host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port_);
  builder.RegisterService(&impl_->service);
  // gRPC's default SO_REUSEPORT would let a second server bind the same port
  // and silently share its calls.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(static_cast<int>(std::min<int64_t>(max_message_bytes, INT_MAX)));
  builder.SetMaxSendMessageSize(INT_MAX);
  grpc::ResourceQuota quota("spindle-serve-grpc");
  quota.SetMaxThreads(threads);
  builder.SetResourceQuota(quota);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, 1);
  // A call thread that finishes goes back to polling; past MAX_POLLERS polling
  // threads it exits, and the next burst of calls starts new ones. With a
  // small MAX_POLLERS every call under load paid a thread start (and the exit
  // of another): threads may stay polling up to the quota instead.
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, threads);
  impl_->server = builder.BuildAndStart();
  if (!impl_->server || port_ == 0)
    throw Error(StatusCode::kInvalidArgument, fmt::format("cannot listen on {} (gRPC)", address));
}

GrpcServer::~GrpcServer() { shutdown(); }

void GrpcServer::shutdown() {
  std::call_once(impl_->stopped, [this] {
    impl_->server->Shutdown();
    impl_->server->Wait();
  });
}

}  // namespace spindle::cli::serve
