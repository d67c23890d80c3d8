// serve_command.cpp — spindle serve: the Open Inference Protocol (KServe v2)
// over HTTP/REST and gRPC for every model of a repository (docs/serve.md).
//
//   spindle serve --model-repository DIR [--http-port 8000] [--grpc-port N] [--host 127.0.0.1]
//                 [--max-queue N] [--threads N] [--inter-threads N] [--concurrent-runs N]
//                 [--http-threads N] [--grpc-threads N] [--max-body-bytes N]
//
// HTTP and gRPC threads parse a request, check it against the model, put it
// in the model's bounded FIFO queue and wait for its result; the model's
// runner threads run it on the process's shared intra-op / inter-op pools, at
// most --concurrent-runs runs at once over all models. SIGTERM or SIGINT:
// stop accepting connections, answer what is in flight, exit 0.
#include <malloc.h>
#include <netdb.h>
#include <pthread.h>
#include <sys/socket.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <optional>
#include <cstdio>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "serve_grpc.h"
#include "serve_models.h"
#include "serve_protocol.h"
#include "spindle/version.h"

namespace spindle::cli {
namespace {

using serve::Clock;
using serve::HttpError;

struct ServeArgs {
  std::string repository;
  std::string host = "127.0.0.1";
  int port = 8000;
  int grpc_port = -1;  // -1: no gRPC transport
  int max_queue = 64;
  int threads = 0;
  int inter_threads = 0;
  int concurrent_runs = 1;
  int http_threads = 64;
  int grpc_threads = 64;
  int64_t max_body_bytes = 64ll << 20;
  std::optional<bool> spin;                  // unset: the pools' defaults
  std::optional<int64_t> spin_duration_us;
};

void reply_json(httplib::Response& res, int status, const nlohmann::json& j) {
  res.status = status;
  res.set_content(j.dump(), "application/json");
}

void reply_error(httplib::Response& res, int status, const std::string& message) {
  reply_json(res, status, {{"error", message}});
}

std::optional<int64_t> integer_header(const httplib::Request& req, const char* name) {
  if (!req.has_header(name)) return std::nullopt;
  const std::string v = req.get_header_value(name);
  size_t used = 0;
  int64_t n = -1;
  try {
    n = std::stoll(v, &used);
  } catch (const std::exception&) {
  }
  if (v.empty() || used != v.size() || n < 0)
    throw HttpError(400, "bad_request", fmt::format("header {} is \"{}\", expected a non-negative integer", name, v));
  return n;
}

// The numeric address and port of one end of a socket, as the HTTP library
// writes them into a request.
bool socket_end(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  auto* a = reinterpret_cast<sockaddr*>(&addr);
  if ((peer ? getpeername(fd, a, &len) : getsockname(fd, a, &len)) != 0) return false;
  if (addr.ss_family != AF_INET && addr.ss_family != AF_INET6) return false;
  char host[NI_MAXHOST], serv[NI_MAXSERV];
  if (getnameinfo(a, len, host, sizeof(host), serv, sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV) != 0) return false;
  ip = host;
  port = std::atoi(serv);
  return true;
}

// The descriptor of the connection a request came on, or -1. cpp-httplib
// 0.11 does not tell a handler whether its client is still there, but a TCP
// connection is named by its two ends, which the request carries: the one
// socket of this process with both is the request's (it stays open until the
// handler returns).
int connection_socket(const httplib::Request& req) {
  if (req.remote_port < 0 || req.local_port < 0) return -1;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    int fd = -1;
    try {
      fd = std::stoi(entry.path().filename().string());
    } catch (const std::exception&) {
      continue;
    }
    std::string ip;
    int port = -1;
    if (!socket_end(fd, false, ip, port) || port != req.local_port || ip != req.local_addr) continue;
    if (socket_end(fd, true, ip, port) && port == req.remote_port && ip == req.remote_addr) return fd;
  }
  return -1;
}

// Whether the client closed (or reset) the connection: a read that would
// not block finds its end. Bytes waiting (a pipelined next request) are left
// for the HTTP library.
bool client_gone(int fd) {
  char c;
  const ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

// Runs one infer request through the model's queue; fills `res`. A client
// that closes its connection while the request waits or runs cancels it.
void infer(serve::ModelVersion& m, const httplib::Request& req, httplib::Response& res, Clock::time_point arrived) {
  const InferenceSession& s = m.session();
  serve::InferRequest r =
      serve::parse_infer_request(req.body, integer_header(req, "Inference-Header-Content-Length"), s.inputs(), s.outputs());
  if (auto header = integer_header(req, "Inference-Timeout-Us"); header && *header > 0) r.timeout_us = *header;
  std::optional<Clock::time_point> deadline;
  if (r.timeout_us) deadline = arrived + std::chrono::microseconds(*r.timeout_us);
  // The socket is looked up at the first check (50 ms in), so a request
  // answered sooner pays nothing for it.
  int fd = -2;  // -2: not looked up yet; -1: not found
  const std::function<bool()> abandoned = [&req, &fd] {
    if (fd == -2) fd = connection_socket(req);
    return fd >= 0 && client_gone(fd);
  };
  const std::vector<Tensor> values =
      serve::run_request(m, std::move(r.feeds), r.outputs, deadline, r.timeout_us.value_or(0), abandoned);
  size_t json_length = 0;
  std::string body = serve::build_infer_response(m.name(), m.version(), r, values, json_length);
  if (json_length) {
    res.set_header("Inference-Header-Content-Length", std::to_string(json_length));
    res.set_content(std::move(body), "application/octet-stream");
  } else {
    res.set_content(std::move(body), "application/json");
  }
  res.status = 200;
}

nlohmann::json model_metadata(const serve::Repository& repo, const serve::ModelVersion& m, bool all_versions) {
  nlohmann::json versions = nlohmann::json::array();
  if (all_versions)
    for (const std::string& v : repo.versions(m.name())) versions.push_back(v);
  else
    versions.push_back(m.version());
  return {{"name", m.name()},
          {"versions", versions},
          {"platform", "onnx"},
          {"inputs", serve::tensor_metadata(m.session().inputs())},
          {"outputs", serve::tensor_metadata(m.session().outputs())}};
}

// The name and version captured by a /v2/models/<name>[/versions/<v>] route.
std::pair<std::string, std::string> model_of(const httplib::Request& req) {
  return {req.matches[1].str(), req.matches.size() > 3 ? req.matches[3].str() : ""};
}

void add_routes(httplib::Server& svr, serve::Repository& repo, const std::atomic<bool>& draining) {
  // Every handler turns its refusals into {"error": ...} with their status.
  auto guarded = [](auto fn) {
    return [fn](const httplib::Request& req, httplib::Response& res) {
      try {
        fn(req, res);
      } catch (const HttpError& e) {
        reply_error(res, e.status, e.what());
      } catch (const Error& e) {
        reply_error(res, e.code() == StatusCode::kNotFound ? 404 : 400, e.what());
      } catch (const std::exception& e) {
        reply_error(res, 500, e.what());
      }
    };
  };
  svr.Get("/v2/health/live", [](const httplib::Request&, httplib::Response& res) { reply_json(res, 200, {{"live", true}}); });
  svr.Get("/v2/health/ready", [&](const httplib::Request&, httplib::Response& res) {
    const bool ready = !draining && repo.all_ready();
    reply_json(res, ready ? 200 : 400, {{"ready", ready}});
  });
  svr.Get("/v2", [](const httplib::Request&, httplib::Response& res) {
    reply_json(res, 200,
               {{"name", "spindle"},
                {"version", version()},
                {"extensions", serve::server_extensions()}});
  });
  const std::string model = R"(/v2/models/([^/]+)(/versions/([^/]+))?)";
  svr.Get(model + "/ready", guarded([&](const httplib::Request& req, httplib::Response& res) {
            auto [name, version] = model_of(req);
            serve::find_model(repo, name, version);
            reply_json(res, draining ? 400 : 200, {{"name", name}, {"ready", !draining}});
          }));
  svr.Get(model, guarded([&](const httplib::Request& req, httplib::Response& res) {
            auto [name, version] = model_of(req);
            reply_json(res, 200, model_metadata(repo, *serve::find_model(repo, name, version), version.empty()));
          }));
  svr.Post(model + "/infer", [&](const httplib::Request& req, httplib::Response& res) {
    const Clock::time_point arrived = Clock::now();
    auto [name, version] = model_of(req);
    std::shared_ptr<serve::ModelVersion> m;
    try {
      m = serve::find_model(repo, name, version);
    } catch (const HttpError& e) {
      return reply_error(res, e.status, e.what());
    }
    try {
      serve::count_request(m->metrics(), arrived, [&] { infer(*m, req, res, arrived); });
    } catch (const HttpError& e) {
      reply_error(res, e.status, e.what());
    } catch (const Error& e) {
      reply_error(res, 400, e.what());
    } catch (const std::exception& e) {
      reply_error(res, 500, e.what());
    }
  });
  svr.Post("/v2/repository/index", guarded([&](const httplib::Request& req, httplib::Response& res) {
             bool ready_only = false;
             if (!req.body.empty()) {
               nlohmann::json j;
               try {
                 j = nlohmann::json::parse(req.body);
               } catch (const nlohmann::json::parse_error& e) {
                 throw HttpError(400, "bad_request", fmt::format("malformed JSON in the request: {}", e.what()));
               }
               if (!j.is_object()) throw HttpError(400, "bad_request", "the request must be a JSON object");
               if (j.contains("ready")) {
                 if (!j["ready"].is_boolean()) throw HttpError(400, "bad_request", "\"ready\" must be true or false");
                 ready_only = j["ready"].get<bool>();
               }
             }
             nlohmann::json a = nlohmann::json::array();
             for (const serve::VersionState& v : repo.index()) {
               if (ready_only && v.state != "READY") continue;
               nlohmann::json e{{"name", v.name}, {"state", v.state}};
               if (!v.version.empty()) e["version"] = v.version;
               if (!v.reason.empty()) e["reason"] = v.reason;
               a.push_back(std::move(e));
             }
             reply_json(res, 200, a);
           }));
  svr.Post(R"(/v2/repository/models/([^/]+)/load)", guarded([&](const httplib::Request& req, httplib::Response& res) {
             repo.load(req.matches[1].str());
             reply_json(res, 200, nlohmann::json::object());
           }));
  svr.Post(R"(/v2/repository/models/([^/]+)/unload)", guarded([&](const httplib::Request& req, httplib::Response& res) {
             repo.unload(req.matches[1].str());
             reply_json(res, 200, nlohmann::json::object());
           }));
  svr.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(repo.metrics_text(), "text/plain; version=0.0.4");
  });
  // Refusals made before any handler (no route, body too large) get a JSON body too.
  svr.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 413) reply_error(res, 413, "the request body is larger than --max-body-bytes");
    else if (res.status == 404) reply_error(res, 404, fmt::format("no endpoint {} {}", req.method, req.path));
    else reply_error(res, res.status, fmt::format("HTTP {}", res.status));
  });
}

void run_server(const ServeArgs& a) {
  // SIGTERM / SIGINT are taken by one thread (sigwait); block them in every
  // thread started from here on.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // Request bodies, their parsed JSON and tensors are large and short-lived:
  // keep them on the heap for reuse instead of a fresh mmap (and its page
  // faults) per request.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);

  ThreadingOptions intra{.name = "intra_op"}, inter{.name = "inter_op"};
  intra.num_threads = a.threads;
  inter.num_threads = a.inter_threads;
  for (ThreadingOptions* pool : {&intra, &inter}) {
    if (a.spin) pool->allow_spinning = *a.spin;
    if (a.spin_duration_us) pool->spin_duration = std::chrono::microseconds(*a.spin_duration_us);
  }
  auto env = Environment::create(intra, inter);
  if (!env.is_ok()) throw Error(env.status());
  serve::Repository repo(a.repository, *env.value(), a.max_queue, a.concurrent_runs);
  repo.load_all();

  httplib::Server svr;
  const int http_threads = a.http_threads;
  svr.new_task_queue = [http_threads] { return new httplib::ThreadPool(static_cast<size_t>(http_threads)); };
  svr.set_payload_max_length(static_cast<size_t>(a.max_body_bytes));
  svr.set_tcp_nodelay(true);  // small responses leave at once, not after a delayed ACK
  // cpp-httplib closes a keep-alive connection after 5 requests by default;
  // clients then reconnect (or fail a request sent as it closes).
  svr.set_keep_alive_max_count(100000);
  // SO_REUSEADDR only: cpp-httplib's default SO_REUSEPORT would let a second
  // server bind the same port and silently share its connections.
  svr.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  std::atomic<bool> draining{false};
  add_routes(svr, repo, draining);
  const int port = a.port == 0 ? svr.bind_to_any_port(a.host) : (svr.bind_to_port(a.host, a.port) ? a.port : -1);
  if (port < 0) throw Error(StatusCode::kInvalidArgument, fmt::format("cannot listen on {}:{}", a.host, a.port));

  std::unique_ptr<serve::GrpcServer> grpc;
  if (a.grpc_port >= 0)
    grpc = std::make_unique<serve::GrpcServer>(repo, draining, a.host, a.grpc_port, a.grpc_threads, a.max_body_bytes);

  std::atomic<bool> finished{false};
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (finished) return;
    std::fprintf(stderr, "spindle serve: %s: draining\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    draining = true;
    // Both transports drain at once.
    std::thread grpc_stop([&] {
      if (grpc) grpc->shutdown();
    });
    // stop() before listen_after_bind has started would be lost: repeat.
    while (!finished) {
      svr.stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    grpc_stop.join();
  });
  std::string names;
  for (const serve::VersionState& v : repo.index())
    names += fmt::format("{}{}/{}", names.empty() ? "" : ", ", v.name, v.version);
  const std::string grpc_text = grpc ? fmt::format(", gRPC on {}:{}", a.host, grpc->port()) : "";
  std::printf("spindle serve: listening on http://%s:%d%s (models: %s)\n", a.host.c_str(), port, grpc_text.c_str(),
              names.c_str());
  std::fflush(stdout);
  // Returns once stopped, after the HTTP threads have answered what they held.
  svr.listen_after_bind();
  finished = true;
  if (!draining) pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  grpc.reset();  // (shut down already, unless the HTTP server stopped by itself)
  repo.unload_all();
  std::printf("spindle serve: stopped\n");
  std::fflush(stdout);
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("serve", "Serve a model repository over the Open Inference Protocol (KServe v2, HTTP and gRPC)");
  auto a = std::make_shared<ServeArgs>();
  cmd->add_option("--model-repository", a->repository, "directory of <name>/<version>/model.onnx")->required();
  cmd->add_option("--host", a->host, "address to listen on");
  cmd->add_option("--http-port", a->port, "port (0 = any free port, printed at start)")->check(CLI::Range(0, 65535));
  cmd->add_option("--grpc-port", a->grpc_port, "gRPC port (0 = any free port, printed at start; absent = no gRPC)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--max-queue", a->max_queue, "requests waiting per model version (config.json max_queue overrides)")
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--threads", a->threads, "intra-op threads of the whole process, counting a caller (0 = physical cores)")
      ->check(CLI::Range(0, kMaxThreadCount));
  cmd->add_option("--inter-threads", a->inter_threads, "inter-op threads (parallel-mode models; 0 = physical cores)")
      ->check(CLI::Range(0, kMaxThreadCount));
  cmd->add_option("--spin", a->spin, "allow the pools' workers to spin between runs: 0 or 1 (default: the pools')")
      ->check(CLI::IsMember({"0", "1"}));
  cmd->add_option("--spin-duration-us", a->spin_duration_us, "spin window in microseconds (both pools)")
      ->check(CLI::Range(int64_t{0}, int64_t{10'000'000}));
  cmd->add_option("--concurrent-runs", a->concurrent_runs, "runs at once over all models")->check(CLI::Range(1, 4096));
  cmd->add_option("--http-threads", a->http_threads, "HTTP connection threads (parse, enqueue, wait; no compute)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--grpc-threads", a->grpc_threads,
                  "gRPC threads, at most (each takes a call, enqueues it, waits; no compute)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--max-body-bytes", a->max_body_bytes,
                  "largest request body or gRPC message (413 / RESOURCE_EXHAUSTED past it)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd->callback([a] { run_server(*a); });
}

}  // namespace spindle::cli
