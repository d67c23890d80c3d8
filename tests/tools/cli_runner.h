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
inline int run_cli(const std::string& args, std::string* output = nullptr, const std::string& prefix = "") {
  const std::filesystem::path out = temp_dir() / "cli-output.txt";
  const int rc = std::system(fmt::format("{}{} {} > {} 2>&1", prefix, SPINDLE_CLI, args, out.string()).c_str());
  if (output) {
    std::ifstream in(out);
    output->assign(std::istreambuf_iterator<char>(in), {});
  }
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// As run_cli, killed after `seconds` (exit status 137) and, outside
// AddressSanitizer builds (whose shadow memory needs a large address
// space), limited to 4 GiB of address space: for hostile inputs that once
// made spindle read or allocate without end, so that a regression fails the
// test instead of hanging it or exhausting the machine's memory.
inline int run_cli_bounded(const std::string& args, std::string* output = nullptr, int seconds = 20) {
#if defined(__SANITIZE_ADDRESS__)
  const std::string limit;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  const std::string limit;
#else
  const std::string limit = "ulimit -v 4194304; ";
#endif
#else
  const std::string limit = "ulimit -v 4194304; ";
#endif
  return run_cli(args, output, fmt::format("{}timeout -s KILL {} ", limit, seconds));
}

}  // namespace spindle
