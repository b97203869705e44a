// The four `graft` subcommands. Each registers its options on a CLI11 subcommand and returns the
// callback main() runs after parsing; every failure is a Status, never an exception.
#pragma once

#include <functional>
#include <string>

#include <CLI/CLI.hpp>

#include "graft/status.h"

namespace graft::cli {

using Command = std::function<Status()>;

Command add_build_command(CLI::App& app);
Command add_run_command(CLI::App& app);
Command add_inspect_command(CLI::App& app);
Command add_ops_command(CLI::App& app);

// `graft --version`: the version, the backends this graft was built with, the ONNX opsets it reads
// and the plan format it writes.
std::string version_text();

// For a command-line parse error about a trtexec flag that graft has no same-named equivalent for
// (e.g. --int8, --useCudaGraph): what graft does instead; "" for anything else. The trtexec flags
// graft accepts as they are (--minShapes, --saveEngine, --loadInputs, ...) never get here.
std::string trtexec_flag_hint(const std::string& parse_error);

}  // namespace graft::cli
