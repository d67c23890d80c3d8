// serve_grpc.h — the gRPC transport of spindle serve: the Open Inference
// Protocol's inference.GRPCInferenceService (proto/inference.proto) over the
// same model repository, queues and pools as the HTTP transport.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "serve_models.h"

namespace spindle::cli::serve {

class GrpcServer {
 public:
  // Listens on host:port (0 = any free port) and starts serving. At most
  // `threads` gRPC threads (the sync server's ResourceQuota): each takes a
  // call, checks it, puts it in its model's queue and waits; none computes.
  // Messages up to max_message_bytes. Throws Error when it cannot listen.
  GrpcServer(Repository& repo, const std::atomic<bool>& draining, const std::string& host, int port, int threads,
             int64_t max_message_bytes);
  ~GrpcServer();  // shutdown()
  int port() const { return port_; }
  // Stops taking calls and returns once the calls in flight are answered. Once only; later calls return at once.
  void shutdown();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace spindle::cli::serve
