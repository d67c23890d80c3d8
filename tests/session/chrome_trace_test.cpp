// chrome_trace_test.cpp — the Chrome trace text of profiled runs: valid JSON
// whatever the model's names hold (quotes, backslashes, control characters,
// UTF-8 and bytes that are not UTF-8), node spans, parallel_for blocks and the waits between a node's own
// blocks, nested scopes, and the thread names.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "session/chrome_trace.h"

namespace spindle {
namespace {

TEST(ChromeTrace, NamesFromTheModelStayValidJson) {
  ProfiledRun run;
  run.offset_us = 100;
  const std::string hostile = "a\"b\\c\nd\te\x01 \xc3\xa9";
  run.profile.nodes.push_back({0, hostile, "Op\"Type", 11, 5.0, 20.0});
  run.profile.nodes.push_back({7, "inner", "Relu", 11, 6.0, 2.0, 0, "If/then_branch"});
  run.profile.blocks.push_back({0, 11, 5.0, 4.0});
  run.profile.blocks.push_back({0, 12, 5.5, 8.0});
  run.profile.blocks.push_back({0, 11, 15.0, 5.0});
  run.profile.nodes.push_back({8, "bad\xff\xfe", "Relu", 11, 30.0, 1.0});
  const std::string text = chrome_trace_json({run, run}, "spindle \"m\"", 11, {12});
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(text)) << text;
  int nodes = 0, blocks = 0, waits = 0, threads = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M") {
      if (e["name"] == "process_name") EXPECT_EQ(e["args"]["name"], "spindle \"m\"");
      if (e["name"] == "thread_name") {
        ++threads;
        EXPECT_EQ(e["args"]["name"], e["tid"] == 11 ? "caller" : "intra-op worker 12");
      }
      continue;
    }
    EXPECT_EQ(e["ph"], "X");
    if (e["cat"] == "node") {
      ++nodes;
      if (e["args"]["id"] == 0) {
        EXPECT_EQ(e["name"], "Op\"Type");
        EXPECT_EQ(e["args"]["node"], hostile);
        EXPECT_FALSE(e["args"].contains("scope"));
        EXPECT_DOUBLE_EQ(e["ts"].get<double>() - 100.0, 5.0);
        EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 20.0);
      } else if (e["args"]["id"] == 8) {
        EXPECT_EQ(e["args"]["node"], "bad\xef\xbf\xbd\xef\xbf\xbd");  // each byte U+FFFD
      } else {
        EXPECT_EQ(e["args"]["scope"], "If/then_branch");
        EXPECT_EQ(e["args"]["parent"], 0);
      }
    } else if (e["cat"] == "parallel_for") {
      ++blocks;
      EXPECT_EQ(e["args"]["op"], "Op\"Type");
    } else if (e["cat"] == "wait") {
      ++waits;
      EXPECT_EQ(e["args"]["node"], hostile);
      EXPECT_EQ(e["tid"], 11);
    }
  }
  EXPECT_EQ(nodes, 6);
  EXPECT_EQ(blocks, 6);
  EXPECT_EQ(waits, 4);  // per run: between the caller's two blocks (9 -> 15) and after the last (20 -> 25)
  EXPECT_EQ(threads, 2);
  EXPECT_EQ(j["displayTimeUnit"], "ms");
}

TEST(ChromeTrace, NoRunsIsAnEmptyValidTrace) {
  const nlohmann::json j = nlohmann::json::parse(chrome_trace_json({}, "p", 1, {}));
  ASSERT_EQ(j["traceEvents"].size(), 1u);
  EXPECT_EQ(j["traceEvents"][0]["name"], "process_name");
}

}  // namespace
}  // namespace spindle
