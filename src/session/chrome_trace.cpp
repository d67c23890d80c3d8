// chrome_trace.cpp — profiled runs as Chrome trace event JSON
// (chrome://tracing, Perfetto): spindle profile and end_profiling write it.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "session/chrome_trace.h"

namespace spindle {

std::string chrome_trace_json(const std::vector<ProfiledRun>& runs, const std::string& process_name, int caller_tid,
                              const std::vector<int>& intra_worker_tids) {
  nlohmann::json events = nlohmann::json::array();
  std::set<int> tids;
  auto span = [&](const char* name, const char* cat, int tid, double ts, double dur, nlohmann::json args) {
    events.push_back({{"name", name}, {"cat", cat}, {"ph", "X"}, {"pid", 1}, {"tid", tid}, {"ts", ts}, {"dur", dur},
                      {"args", std::move(args)}});
  };
  for (size_t r = 0; r < runs.size(); ++r) {
    const double off = runs[r].offset_us;
    const RunProfile& p = runs[r].profile;
    std::map<int, std::vector<const BlockEvent*>> blocks_of;
    for (const auto& b : p.blocks) blocks_of[b.node_index].push_back(&b);
    for (const auto& n : p.nodes) {
      tids.insert(n.thread_id);
      nlohmann::json args = {{"node", n.node_name}, {"run", r}};
      if (n.parent_index >= 0) {  // inside a subgraph: nested in its parent's span on the same thread
        args["scope"] = n.scope;
        args["parent"] = n.parent_index;
      }
      args["id"] = n.node_index;
      span(n.op_type.c_str(), "node", n.thread_id, off + n.start_us, n.duration_us, std::move(args));
      auto& mine = blocks_of[n.node_index];
      std::sort(mine.begin(), mine.end(), [](auto* x, auto* y) { return x->start_us < y->start_us; });
      double cursor = n.start_us;
      for (const BlockEvent* b : mine) {
        tids.insert(b->thread_id);
        span("block", "parallel_for", b->thread_id, off + b->start_us, b->duration_us,
             {{"node", n.node_name}, {"op", n.op_type}});
        // The node's own thread between its blocks: waiting for the others.
        if (b->thread_id != n.thread_id) continue;
        if (b->start_us - cursor > 1.0) span("wait", "wait", n.thread_id, off + cursor, b->start_us - cursor, {{"node", n.node_name}});
        cursor = std::max(cursor, b->start_us + b->duration_us);
      }
      const double end = n.start_us + n.duration_us;
      if (cursor > n.start_us && end - cursor > 1.0)
        span("wait", "wait", n.thread_id, off + cursor, end - cursor, {{"node", n.node_name}});
    }
  }
  const std::set<int> intra(intra_worker_tids.begin(), intra_worker_tids.end());
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", process_name}}}});
  for (int t : tids) {
    const std::string name = t == caller_tid      ? std::string("caller")
                             : intra.count(t) ? fmt::format("intra-op worker {}", t)
                                              : fmt::format("inter-op thread {}", t);
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", t}, {"args", {{"name", name}}}});
  }
  return nlohmann::json({{"traceEvents", events}, {"displayTimeUnit", "ms"}}).dump() + "\n";
}

}  // namespace spindle
