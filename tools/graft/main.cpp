// `graft`: build, run, inspect engines and list ops. Thin: each subcommand lives in commands.cpp
// over small option structs; every error ends as one line "graft: error: ..." and exit code 1.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "graft/engine.h"
#include "graft/log.h"
#include "tools/graft/commands.h"

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "graft: error: %s\n", message.c_str());
  return 1;
}

// Library messages name no command-line flags (Python shows the same messages); the command line
// adds the flag that helps.
std::string with_flag_hint(const graft::Status& st) {
  std::string text = st.to_string();
  if (st.message().find("plugin library that defines it") != std::string::npos) text += " (--plugins LIB.so)";
  return text;
}

int run_main(int argc, char** argv) {
  CLI::App app{std::string("graft ") + graft::version_string() + ": build and run inference engines"};
  app.set_version_flag("--version", graft::version_string());
  app.require_subcommand(1);
  // --log-level, -q and -v also work after the subcommand (trtexec users put --verbose anywhere);
  // subcommands inherit this when they are created below.
  app.fallthrough();
  // How much graft prints besides results and errors (build stages, warnings): see graft/log.h.
  std::string log_level;
  app.add_option("--log-level", log_level, "quiet (errors only), default (warnings and summaries) or verbose (every stage)")
      ->check(CLI::IsMember({"quiet", "default", "verbose"}));
  app.add_flag_callback("-q,--quiet", [&] { log_level = "quiet"; }, "Same as --log-level quiet");
  app.add_flag_callback("-v,--verbose", [&] { log_level = "verbose"; }, "Same as --log-level verbose");
  std::vector<std::pair<CLI::App*, graft::cli::Command>> commands;
  for (auto add : {graft::cli::add_build_command, graft::cli::add_run_command, graft::cli::add_inspect_command,
                   graft::cli::add_ops_command}) {
    graft::cli::Command cmd = add(app);
    auto subs = app.get_subcommands({});
    commands.emplace_back(subs.back(), std::move(cmd));
  }
  // --max-memory (build, run): a limit on the bytes graft's host tensors hold at once during the
  // command (graft::MemoryLimit in graft/tensor.h); an allocation above it is an error naming it.
  int64_t max_memory = 0;
  for (auto& [sub, cmd] : commands)
    if (sub->get_name() == "build" || sub->get_name() == "run")
      sub->add_option("--max-memory", max_memory,
                      "Most bytes of host memory graft's tensors may hold at once (e.g. 4GiB, 512MB, 1000000)")
          ->transform(CLI::AsSizeValue(true))
          ->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion&) {
    std::printf("%s", graft::cli::version_text().c_str());
    return 0;
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    // A trtexec flag graft has no direct equivalent for: say what graft does instead.
    const std::string hint = graft::cli::trtexec_flag_hint(what);
    return fail(what + (hint.empty() ? " (run graft --help)" : " (" + hint + ")"));
  }
  if (!log_level.empty()) graft::set_log_level(*graft::parse_log_level(log_level));
  for (auto& [sub, cmd] : commands) {
    if (!sub->parsed()) continue;
    graft::MemoryLimit memory_limit(max_memory);
    graft::Status st = cmd();
    if (!st.is_ok()) return fail(with_flag_hint(st));
    return 0;
  }
  return fail("no command given (build, run, inspect, ops)");
}

}  // namespace

int main(int argc, char** argv) {
  // Library code reports errors as Status; this catch is the last line for anything else (bad_alloc,
  // a throwing plugin) so the user still gets one line and a non-zero exit, never a terminate().
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    return fail(std::string("unexpected exception: ") + e.what());
  } catch (...) {
    return fail("unexpected unknown exception");
  }
}
