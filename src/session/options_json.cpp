// options_json.cpp — SessionOptions as a JSON options file (spindle tune
// --out, spindle run|bench --options). The "config" object goes through the
// config-key table (config_keys.cpp) like any other config entry.
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "io/regular_file.h"
#include "session/config_keys.h"
#include "spindle/session.h"

namespace spindle {
namespace {

// The deepest nesting of arrays and objects an options file may hold (its
// own fields nest 2 deep). Checked before parsing: a value nested 200,000
// deep would otherwise be parsed, and printing it (dump) recurses once per
// level and overflows the stack.
constexpr int kMaxJsonDepth = 64;

// The offset where `text` first nests deeper than kMaxJsonDepth, or npos.
// Brackets inside strings do not count.
size_t too_deep_at(const std::string& text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::string::npos;
}

// A user's value for a message: its JSON text, cut to 80 characters.
// "a" or "b"; "a", "b" or "c".
std::string one_of(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i)
    s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + ("\"" + names[i] + "\"");
  return s;
}

std::string shown(const nlohmann::json& v) {
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

}  // namespace

SessionOptions SessionOptions::from_json(const std::string& text, const std::string& origin) {
  if (const size_t at = too_deep_at(text); at != std::string::npos)
    throw Error(StatusCode::kInvalidArgument,
                fmt::format("{}: arrays and objects nest more than {} deep (at byte {}); an options file is a flat "
                            "JSON object",
                            origin, kMaxJsonDepth, at));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw Error(StatusCode::kInvalidArgument, fmt::format("{}: not valid JSON ({})", origin, e.what()));
  }
  if (!j.is_object()) throw Error(StatusCode::kInvalidArgument, fmt::format("{}: expected a JSON object", origin));
  SessionOptions o;
  auto bad = [&](const std::string& key, const std::string& expected) {
    return Error(StatusCode::kInvalidArgument,
                 fmt::format("{}: \"{}\" is {}, expected {}", origin, key, shown(j[key]), expected));
  };
  for (const auto& [key, v] : j.items()) {
    if (key == "intra_op_num_threads" || key == "inter_op_num_threads") {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > kMaxThreadCount)
        throw bad(key, fmt::format("an integer from 0 (default) to {}", kMaxThreadCount));
      (key == "intra_op_num_threads" ? o.intra_op : o.inter_op).num_threads = v.get<int>();
    } else if (key == "execution_mode") {
      const auto mode = v.is_string() ? parse_execution_mode(v.get<std::string>()) : std::nullopt;
      if (!mode) throw bad(key, one_of(execution_mode_names()));
      o.execution_mode = *mode;
    } else if (key == "graph_optimization_level") {
      const auto level = v.is_string() ? parse_optimization_level(v.get<std::string>()) : std::nullopt;
      if (!level) throw bad(key, one_of(optimization_level_names()));
      o.graph_optimization_level = *level;
    } else if (key == "config") {
      if (!v.is_object()) throw bad(key, "an object of string values");
      for (const auto& [ck, cv] : v.items()) {
        if (!cv.is_string() && !cv.is_number())
          throw Error(StatusCode::kInvalidArgument,
                      fmt::format("{}: config \"{}\" is {}, expected a string", origin, ck, shown(cv)));
        if (Status st = parse_config_entry(o, ck, cv.is_string() ? cv.get<std::string>() : cv.dump()); !st.is_ok())
          throw Error(st.code(), fmt::format("{}: {}", origin, st.message()));
      }
    } else {
      throw Error(StatusCode::kInvalidArgument,
                  fmt::format("{}: unknown field \"{}\" (expected intra_op_num_threads, inter_op_num_threads, "
                              "execution_mode, graph_optimization_level, config)",
                              origin, key));
    }
  }
  return o;
}

SessionOptions SessionOptions::from_file(const std::string& path) {
  // A regular file of at most 16 MiB, checked before reading: /dev/zero or a
  // FIFO would otherwise be read without end.
  Result<std::string> text = io::read_whole_file(path, "options file", io::kMaxOptionsFileBytes);
  if (!text.is_ok()) throw Error(text.status());
  return from_json(text.value(), path);
}

std::string SessionOptions::to_json() const {
  nlohmann::ordered_json j;
  j["intra_op_num_threads"] = intra_op.num_threads;
  j["inter_op_num_threads"] = inter_op.num_threads;
  j["execution_mode"] = std::string(execution_mode_name(execution_mode));
  j["graph_optimization_level"] = std::string(optimization_level_name(graph_optimization_level));
  j["config"] = nlohmann::ordered_json::object();
  for (const auto& [k, v] : config_entries()) j["config"][k] = v;
  return j.dump(2) + "\n";
}

void SessionOptions::save(const std::string& path) const {
  std::ofstream out(path);
  if (!out) throw Error(StatusCode::kInvalidArgument, fmt::format("options file {} cannot be written", path));
  out << to_json();
  if (!out) throw Error(StatusCode::kRuntimeError, fmt::format("writing options file {} failed", path));
}

}  // namespace spindle
