// spindle — the command-line tool: spindle run | bench | info | tune | profile | generate | serve.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <new>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "spindle/cpu.h"
#include "spindle/environment.h"
#include "spindle/placement.h"
#include "spindle/status.h"
#include "spindle/version.h"

namespace spindle::cli {

namespace {

// The machine, the kernels' ISA level and the threading defaults as JSON.
nlohmann::json info_json() {
  const CpuTopology& topo = cpu_topology();
  nlohmann::json j;
  j["backend"] = parallel_backend_name();
  const char* cap = std::getenv("SPINDLE_ISA");
  j["isa"] = {{"active", isa_level_name(active_isa_level())},
              {"detected", isa_level_name(detected_isa_level())},
              {"SPINDLE_ISA", cap ? nlohmann::json(cap) : nlohmann::json(nullptr)}};
  j["topology"] = {{"summary", topo.summary},
                   {"usable_physical_cores", topo.usable_physical_cores},
                   {"machine_physical_cores", topo.machine_physical_cores},
                   {"machine_logical_cpus", topo.machine_logical_cpus},
                   {"numa_nodes", topo.numa_nodes},
                   {"default_num_threads", topo.default_num_threads}};
  nlohmann::json env = nlohmann::json::object();
  for (bool intra : {true, false})
    for (const std::string& var : thread_count_variables(intra)) {
      const char* v = std::getenv(var.c_str());
      env[var] = v ? nlohmann::json(v) : nlohmann::json(nullptr);
    }
  j["environment"] = env;
  return j;
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Print the threading configuration and the kernels' ISA level");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "print one JSON object (backend, ISA level, topology, environment)");
  auto machine = std::make_shared<MachineDescription>();
  cmd->add_option("--topology", machine->topology,
                  "print the thread plan on another machine: an hwloc XML file (lstopo machine.xml) or an hwloc "
                  "synthetic description (\"package:2 numa:1 core:32 pu:2\")");
  cmd->add_option("--cpuset", machine->cpuset,
                  "with the plan: the processors the process may use (\"0-15,32-47\"; default: all of a described "
                  "machine, the affinity mask on this one)");
  cmd->add_option("--cpu-quota", machine->cpu_quota,
                  "with the plan: the CPU quota in CPUs (default: none on a described machine, the cgroup's on this "
                  "one)");
  cmd->callback([json, machine, cmd] {
    const bool plan = cmd->count("--topology") + cmd->count("--cpuset") + cmd->count("--cpu-quota") > 0;
    if (plan && *json) throw CLI::ValidationError("--json", "prints this machine only; drop it to print a plan");
    if (plan) fmt::print("{}", placement_plan(*machine).value());
    else if (*json) fmt::print("{}\n", info_json().dump(2));
    else fmt::print("{}", parallel_info());
  });
}

}  // namespace spindle::cli

int main(int argc, char** argv) {
  CLI::App app{"spindle: a CPU inference runtime for ONNX models"};
  app.require_subcommand(1);
  app.set_version_flag("--version", fmt::format("spindle {}", spindle::version()));
  // --help shows each option's default value.
  app.option_defaults()->always_capture_default();
  spindle::cli::add_info_command(app);
#ifndef SPINDLE_THREADING_ONLY
  spindle::cli::add_model_commands(app);
  spindle::cli::add_profile_command(app);
  spindle::cli::add_tune_command(app);
  spindle::cli::add_generate_command(app);
  spindle::cli::add_serve_command(app);
#endif
  // An unknown first word is a mistyped command: say which ones exist.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      known = known || sub->get_name() == argv[1];
      names += fmt::format("{}{}", names.empty() ? "" : ", ", sub->get_name());
    }
    if (!known) {
      fmt::print(stderr, "spindle: error: unknown command '{}'; the commands are {} (see spindle --help)\n", argv[1],
                 names);
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const spindle::Error& e) {
    fmt::print(stderr, "spindle: error: {}\n", e.what());
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    // Every file operation should say what it was for; this is the fallback
    // that still keeps libstdc++'s "filesystem error: ..." text away.
    fmt::print(stderr, "spindle: error: a file operation on '{}' failed: {}\n", e.path1().string(), e.code().message());
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
