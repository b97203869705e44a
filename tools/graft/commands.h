// The four `graft` subcommands. Each registers its options on a CLI11 subcommand and returns the
// callback main() runs after parsing; every failure is a Status, never an exception.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

#include "graft/status.h"

namespace graft::cli {

using Command = std::function<Status()>;

Command add_build_command(CLI::App& app);
Command add_run_command(CLI::App& app);
Command add_inspect_command(CLI::App& app);
Command add_ops_command(CLI::App& app);

}  // namespace graft::cli
