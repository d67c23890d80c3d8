// commands.h — subcommands of the spindle tool; each lives in its own file.
#pragma once

#include <CLI/CLI.hpp>

namespace spindle::cli {

// spindle info
void add_info_command(CLI::App& app);
// spindle run / spindle bench; defined with the runtime.
void add_model_commands(CLI::App& app);
// spindle profile (profile_command.cpp) and spindle tune (tune_command.cpp).
void add_profile_command(CLI::App& app);
void add_tune_command(CLI::App& app);
// spindle generate (generate_command.cpp): greedy decoding with a key / value cache.
void add_generate_command(CLI::App& app);
// spindle serve (serve_command.cpp): the Open Inference Protocol over HTTP.
void add_serve_command(CLI::App& app);

}  // namespace spindle::cli
