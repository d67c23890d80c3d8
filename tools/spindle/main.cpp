// spindle — the command-line tool: spindle run | bench | info | tune | profile.
#include <cstdio>
#include <exception>
#include <new>

#include <fmt/format.h>

#include "commands.h"
#include "spindle/environment.h"
#include "spindle/status.h"

namespace spindle::cli {

void add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Print the threading configuration (parallel_info)");
  cmd->callback([] { fmt::print("{}", parallel_info()); });
}

}  // namespace spindle::cli

int main(int argc, char** argv) {
  CLI::App app{"spindle: a CPU inference runtime for ONNX models"};
  app.require_subcommand(1);
  spindle::cli::add_info_command(app);
#ifndef SPINDLE_THREADING_ONLY
  spindle::cli::add_model_commands(app);
  spindle::cli::add_profile_command(app);
  spindle::cli::add_tune_command(app);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const spindle::Error& e) {
    fmt::print(stderr, "spindle: error: {}\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "spindle: error: out of memory (RESOURCE_EXHAUSTED)\n");
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "spindle: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
