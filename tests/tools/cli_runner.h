// cli_runner.h — runs the built spindle command-line tool (SPINDLE_CLI) for
// the tests of tests/tools, in a per-process scratch folder.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <fmt/format.h>

namespace spindle {

inline std::filesystem::path temp_dir() {
  std::filesystem::path d = std::filesystem::temp_directory_path() / fmt::format("spindle-tools-test-{}", getpid());
  std::filesystem::create_directories(d);
  return d;
}

// Runs `spindle ARGS` (ARGS as a shell would split them); returns its exit
// status and, in *output, what it printed on stdout and stderr.
inline int run_cli(const std::string& args, std::string* output = nullptr) {
  const std::filesystem::path out = temp_dir() / "cli-output.txt";
  const int rc = std::system(fmt::format("{} {} > {} 2>&1", SPINDLE_CLI, args, out.string()).c_str());
  if (output) {
    std::ifstream in(out);
    output->assign(std::istreambuf_iterator<char>(in), {});
  }
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

}  // namespace spindle
