// references.h — the real models' reference inputs and outputs (made by
// scripts/make-references.sh with onnxruntime-node) in $SPINDLE_CACHE/refs
// (default ~/.cache/spindle/refs), shared by the tests of tests/models.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "spindle/io.h"
#include "spindle/session.h"

namespace spindle::testing {

namespace fs = std::filesystem;

inline fs::path cache_dir() {
  if (const char* c = std::getenv("SPINDLE_CACHE")) return c;
  const char* home = std::getenv("HOME");
  return fs::path(home ? home : "/root") / ".cache/spindle";
}

struct Reference {
  fs::path model;
  Feeds feeds;
  std::vector<std::pair<std::string, Tensor>> outputs;
};

inline Reference load_reference(const std::string& stem) {
  const fs::path dir = cache_dir() / "refs" / stem;
  std::ifstream in(dir / "manifest.json");
  if (!in) throw std::runtime_error(fmt::format("no reference at {}: run scripts/make-references.sh", dir.string()));
  nlohmann::json m = nlohmann::json::parse(in);
  Reference r;
  r.model = cache_dir() / "models" / (stem + ".onnx");
  if (m.contains("model")) r.model = m["model"].get<std::string>();
  for (const auto& i : m["inputs"])
    r.feeds.emplace_back(i["name"].get<std::string>(), io::read_npy(dir / i["file"].get<std::string>()).value());
  for (const auto& o : m["outputs"])
    r.outputs.emplace_back(o["name"].get<std::string>(), io::read_npy(dir / o["file"].get<std::string>()).value());
  return r;
}

}  // namespace spindle::testing
