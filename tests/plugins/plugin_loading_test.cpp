// graft::load_plugin_library: every way a plugin library can be wrong gets its own clear error.
// The library paths come from tests/plugins/CMakeLists.txt (compile definitions).
#include <gtest/gtest.h>

#include <string>

#include "graft/plugin.h"
#include "graft/registry.h"
#include "test_util.h"

namespace {

using graft::load_plugin_library;
using graft::OpRegistry;
using graft::StatusCode;
using graft_test::expect_error;

TEST(PluginLoading, MissingLibrary) {
  const std::string path = std::string(GRAFT_TEST_PLUGIN_DIR) + "/libdoes_not_exist.so";
  expect_error(load_plugin_library(path), StatusCode::kNotFound, {path.c_str(), "does not exist"});
}

TEST(PluginLoading, NotASharedLibrary) {
  expect_error(load_plugin_library(GRAFT_TEST_NOT_A_LIBRARY), StatusCode::kInvalidArgument,
               {GRAFT_TEST_NOT_A_LIBRARY, "could not be loaded"});
}

TEST(PluginLoading, NoEntryPoint) {
  expect_error(load_plugin_library(GRAFT_TEST_PLUGIN_NO_ENTRY), StatusCode::kInvalidArgument,
               {GRAFT_TEST_PLUGIN_NO_ENTRY, "does not export the entry point 'graft_plugin_entry'",
                "GRAFT_DEFINE_PLUGIN"});
}

TEST(PluginLoading, AbiVersionMismatch) {
  const std::string theirs = "ABI version " + std::to_string(GRAFT_PLUGIN_ABI_VERSION + 41u);
  const std::string ours = "this graft has ABI version " + std::to_string(GRAFT_PLUGIN_ABI_VERSION);
  auto st = load_plugin_library(GRAFT_TEST_PLUGIN_ABI_MISMATCH);
  expect_error(st, StatusCode::kInvalidArgument,
               {GRAFT_TEST_PLUGIN_ABI_MISMATCH, theirs.c_str(), ours.c_str(), "rebuild"});
  // The register function must never have run (its own message would say so).
  EXPECT_EQ(st.to_string().find("was called"), std::string::npos);
}

TEST(PluginLoading, OpAlreadyProvidedByGraft) {
  graft::OpIdentity id;
  id.name = "CustomLayer";
  if (!OpRegistry::global().find_exact(id))
    GTEST_SKIP() << "graft's own CustomLayer v1 is not registered in this build (ops/custom_layer missing)";
  expect_error(load_plugin_library(GRAFT_TEST_PLUGIN_DUP_CUSTOM_LAYER), StatusCode::kInvalidArgument,
               {GRAFT_TEST_PLUGIN_DUP_CUSTOM_LAYER, "failed to register its ops",
                "ai.onnx.contrib::CustomLayer version 1", "already registered", "by 'graft'"});
  // graft's definition is still the one found.
  auto found = OpRegistry::global().find("ai.onnx.contrib", "CustomLayer", "1", "");
  ASSERT_TRUE(found.is_ok());
  for (const auto& r : OpRegistry::global().all())
    if (r.def == *found) EXPECT_EQ(r.source, "graft");
}

TEST(PluginLoading, SameOpFromTwoLibraries) {
  ASSERT_TRUE(load_plugin_library(GRAFT_TEST_PLUGIN_DUP_A).is_ok());
  expect_error(load_plugin_library(GRAFT_TEST_PLUGIN_DUP_B), StatusCode::kInvalidArgument,
               {GRAFT_TEST_PLUGIN_DUP_B, "failed to register its ops", "ai.test::TestDuplicate version 1",
                "already registered", GRAFT_TEST_PLUGIN_DUP_A});
}

TEST(PluginLoading, RegisterFunctionFails) {
  expect_error(load_plugin_library(GRAFT_TEST_PLUGIN_REGISTER_FAILS), StatusCode::kInvalidArgument,
               {GRAFT_TEST_PLUGIN_REGISTER_FAILS, "failed to register its ops", "needs feature xyz-42"});
}

TEST(PluginLoading, RegisterFunctionThrows) {
  expect_error(load_plugin_library(GRAFT_TEST_PLUGIN_REGISTER_THROWS), StatusCode::kInvalidArgument,
               {GRAFT_TEST_PLUGIN_REGISTER_THROWS, "failed to register its ops", "exception",
                "threw during registration"});
}

TEST(PluginLoading, InvalidOpDefinition) {
  expect_error(load_plugin_library(GRAFT_TEST_PLUGIN_INVALID_DEFINITION), StatusCode::kInvalidArgument,
               {GRAFT_TEST_PLUGIN_INVALID_DEFINITION, "NoKernelOp", "no CPU reference kernel"});
  EXPECT_FALSE(OpRegistry::global().find("ai.test", "NoKernelOp", "1", "").is_ok());
}

TEST(PluginLoading, GoodLibraryLoadsOnceAndItsOpIsFound) {
  ASSERT_TRUE(load_plugin_library(GRAFT_TEST_PLUGIN_CLAMPED_SWISH).is_ok());
  // Loading the same path again is a no-op, not a duplicate-registration error.
  auto again = load_plugin_library(GRAFT_TEST_PLUGIN_CLAMPED_SWISH);
  EXPECT_TRUE(again.is_ok()) << again.to_string();
  auto found = OpRegistry::global().find("ai.example", "ClampedSwish", "1", "");
  ASSERT_TRUE(found.is_ok()) << found.status().to_string();
  bool seen = false;
  for (const auto& r : OpRegistry::global().all())
    if (r.def == *found) {
      seen = true;
      EXPECT_EQ(r.source, GRAFT_TEST_PLUGIN_CLAMPED_SWISH);
    }
  EXPECT_TRUE(seen);
}

}  // namespace
