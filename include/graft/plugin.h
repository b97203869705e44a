// graft/plugin.h — the C entry point of a graft plugin library.
//
// A plugin library defines its ops with the SDK (graft/op.h) and exports exactly one C symbol,
// `graft_plugin_entry`, returning a GraftPluginInfo. graft checks `abi_version` before calling
// anything else, so a library built against another SDK layout is refused with a clear error
// instead of crashing.
//
//   static graft::Status register_my_ops(graft::OpRegistry& r, const char* source) { ... }
//   GRAFT_DEFINE_PLUGIN("my_ops", register_my_ops)
#pragma once

#include <cstdint>
#include <cstdio>
#include <exception>

#include "graft/registry.h"

// Bump whenever OpDef, KernelContext, TensorView or the registry change layout.
#define GRAFT_PLUGIN_ABI_VERSION 3u  // 2: OpDef::Example carries fixed input values; 3: OpDef and KernelContext carry channels_last_io

extern "C" {
struct GraftPluginInfo {
  uint32_t abi_version;    // must equal the host's GRAFT_PLUGIN_ABI_VERSION
  const char* name;        // human-readable library name
  // Returns 0 on success; on failure writes a message into err (size err_size).
  int (*register_ops)(graft::OpRegistry* registry, const char* source, char* err, uint32_t err_size);
};
typedef const GraftPluginInfo* (*GraftPluginEntryFn)(void);
}

#define GRAFT_PLUGIN_ENTRY_SYMBOL "graft_plugin_entry"

// Defines the entry point; exceptions and errors are turned into the error buffer (noexcept).
#define GRAFT_DEFINE_PLUGIN(NAME, REGISTER_FN)                                                   \
  extern "C" __attribute__((visibility("default"))) const GraftPluginInfo* graft_plugin_entry() { \
    static const GraftPluginInfo info = {                                                        \
        GRAFT_PLUGIN_ABI_VERSION, NAME,                                                          \
        [](graft::OpRegistry* r, const char* src, char* err, uint32_t n) noexcept -> int {       \
          try {                                                                                  \
            graft::Status st = REGISTER_FN(*r, src);                                             \
            if (st.is_ok()) return 0;                                                            \
            std::snprintf(err, n, "%s", st.to_string().c_str());                                \
          } catch (const std::exception& e) {                                                    \
            std::snprintf(err, n, "exception: %s", e.what());                                   \
          } catch (...) {                                                                        \
            std::snprintf(err, n, "unknown exception");                                         \
          }                                                                                      \
          return 1;                                                                              \
        }};                                                                                      \
    return &info;                                                                                \
  }
