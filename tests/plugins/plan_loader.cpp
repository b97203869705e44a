// Loads a plan file in a fresh process (no plugins loaded unless given) and prints the outcome:
// "ok" or the error. Used to check what a plan with a custom op says when its plugin is absent.
//   graft_test_plan_loader PLAN [PLUGIN.so ...]
#include <cstdio>
#include <string>

#include "graft/engine.h"
#include "graft/registry.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PLAN [PLUGIN.so ...]\n", argv[0]);
    return 2;
  }
  for (int i = 2; i < argc; ++i) {
    graft::Status st = graft::load_plugin_library(argv[i]);
    if (!st.is_ok()) {
      std::printf("error: %s\n", st.to_string().c_str());
      return 1;
    }
  }
  auto engine = graft::Engine::load_plan(argv[1]);
  if (!engine.is_ok()) {
    std::printf("error: %s\n", engine.status().to_string().c_str());
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
