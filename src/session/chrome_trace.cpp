// chrome_trace.cpp — profiled runs as Chrome trace event JSON
// (chrome://tracing, Perfetto): spindle profile and end_profiling write it.
// The events are written straight into the output text, one line each: a
// JSON tree of them would hold ~20x the text's size (330 MB more for 100
// runs of an 8-layer decoder).
#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "session/chrome_trace.h"

namespace spindle {
namespace {

// A JSON string literal (quoted and escaped; bytes that are not UTF-8, which
// a model's names may hold, become U+FFFD).
std::string quoted(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

class EventWriter {
 public:
  explicit EventWriter(std::string& out) : out_(out) { out_ = "{\"traceEvents\":[\n"; }

  // A complete ("X") event; `name` is a JSON string literal, `args` the
  // text of its args object's members.
  void span(std::string_view name, const char* cat, int tid, double ts, double dur, const std::string& args) {
    begin();
    fmt::format_to(std::back_inserter(out_),
                   "{{\"args\":{{{}}},\"cat\":\"{}\",\"dur\":{},\"name\":{},\"ph\":\"X\",\"pid\":1,\"tid\":{},\"ts\":{}}}",
                   args, cat, dur, name, tid, ts);
  }
  // A metadata ("M") event naming the process (tid < 0) or a thread.
  void metadata(const char* name, int tid, const std::string& value) {
    begin();
    if (tid < 0)
      fmt::format_to(std::back_inserter(out_), "{{\"args\":{{\"name\":{}}},\"name\":\"{}\",\"ph\":\"M\",\"pid\":1}}",
                     quoted(value), name);
    else
      fmt::format_to(std::back_inserter(out_), "{{\"args\":{{\"name\":{}}},\"name\":\"{}\",\"ph\":\"M\",\"pid\":1,\"tid\":{}}}",
                     quoted(value), name, tid);
  }
  void finish() { out_ += "\n],\"displayTimeUnit\":\"ms\"}\n"; }

 private:
  void begin() {
    if (any_) out_ += ",\n";
    any_ = true;
  }
  std::string& out_;
  bool any_ = false;
};

// The node spans of one run, its parallel_for blocks and the waits of each
// node's own thread between its blocks.
void write_run(EventWriter& w, const ProfiledRun& run, size_t r, std::set<int>& tids) {
  const double off = run.offset_us;
  const RunProfile& p = run.profile;
  std::map<int, std::vector<const BlockEvent*>> blocks_of;
  for (const auto& b : p.blocks) blocks_of[b.node_index].push_back(&b);
  for (const auto& n : p.nodes) {
    tids.insert(n.thread_id);
    const std::string node = quoted(n.node_name);
    const std::string op = quoted(n.op_type);
    std::string args = fmt::format("\"id\":{},\"node\":{}", n.node_index, node);
    if (n.parent_index >= 0)  // inside a subgraph: nested in its parent's span on the same thread
      args += fmt::format(",\"parent\":{}", n.parent_index);
    args += fmt::format(",\"run\":{}", r);
    if (n.parent_index >= 0) args += ",\"scope\":" + quoted(n.scope);
    w.span(op, "node", n.thread_id, off + n.start_us, n.duration_us, args);
    auto& mine = blocks_of[n.node_index];
    std::sort(mine.begin(), mine.end(), [](auto* x, auto* y) { return x->start_us < y->start_us; });
    const std::string wait_args = "\"node\":" + node;
    double cursor = n.start_us;
    for (const BlockEvent* b : mine) {
      tids.insert(b->thread_id);
      w.span("\"block\"", "parallel_for", b->thread_id, off + b->start_us, b->duration_us,
             fmt::format("\"node\":{},\"op\":{}", node, op));
      // The node's own thread between its blocks: waiting for the others.
      if (b->thread_id != n.thread_id) continue;
      if (b->start_us - cursor > 1.0) w.span("\"wait\"", "wait", n.thread_id, off + cursor, b->start_us - cursor, wait_args);
      cursor = std::max(cursor, b->start_us + b->duration_us);
    }
    const double end = n.start_us + n.duration_us;
    if (cursor > n.start_us && end - cursor > 1.0) w.span("\"wait\"", "wait", n.thread_id, off + cursor, end - cursor, wait_args);
  }
}

}  // namespace

std::string chrome_trace_json(const std::vector<ProfiledRun>& runs, const std::string& process_name, int caller_tid,
                              const std::vector<int>& intra_worker_tids) {
  std::string out;
  EventWriter w(out);
  std::set<int> tids;
  for (size_t r = 0; r < runs.size(); ++r) write_run(w, runs[r], r, tids);
  const std::set<int> intra(intra_worker_tids.begin(), intra_worker_tids.end());
  w.metadata("process_name", -1, process_name);
  for (int t : tids) {
    const std::string name = t == caller_tid      ? std::string("caller")
                             : intra.count(t) ? fmt::format("intra-op worker {}", t)
                                              : fmt::format("inter-op thread {}", t);
    w.metadata("thread_name", t, name);
  }
  w.finish();
  return out;
}

}  // namespace spindle
