// The host memory limit (graft::MemoryLimit; `graft build/run --max-memory`, Python max_memory=):
// allocations above it are errors naming the limit, freed tensors give their bytes back, limits nest,
// and builds and runs respect it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "graft/engine.h"
#include "tests/unit/onnx_model_builder.h"

namespace graft {
namespace {

using testing::OnnxModelBuilder;

TEST(MemoryLimit, CountsHeldBytesAndRefusesAboveTheLimit) {
  MemoryLimit limit(1 << 20);
  auto a = Tensor::allocate(DataType::kFloat32, {128, 1024});  // 512 KiB
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  EXPECT_GE(limit.in_use(), 512 * 1024);
  auto b = Tensor::allocate(DataType::kFloat32, {128, 1024});  // another 512 KiB (+ alignment): over
  ASSERT_FALSE(b.is_ok());
  EXPECT_EQ(b.status().code(), StatusCode::kOutOfMemory);
  EXPECT_NE(b.status().message().find("memory limit of 1048576 bytes"), std::string::npos) << b.status().to_string();
  // Freed bytes come back.
  *a = Tensor();
  EXPECT_EQ(limit.in_use(), 0);
  EXPECT_TRUE(Tensor::allocate(DataType::kFloat32, {128, 1024}).is_ok());
  EXPECT_GE(limit.peak(), 512 * 1024);
  // empty() throws bad_alloc rather than handing out a buffer above the limit.
  EXPECT_THROW(Tensor::empty(DataType::kFloat32, {1024, 1024}), std::bad_alloc);
}

TEST(MemoryLimit, InnermostAppliesAndTensorsFreedOnOtherThreadsGiveBytesBack) {
  MemoryLimit outer(1 << 20);
  Tensor held;
  {
    MemoryLimit inner(16 << 20);
    auto big = Tensor::allocate(DataType::kFloat32, {1024, 1024});  // 4 MiB: under the inner limit
    ASSERT_TRUE(big.is_ok());
    EXPECT_EQ(outer.in_use(), 0);
    held = *big;
    std::thread([t = std::move(big).value()]() mutable { t = Tensor(); }).join();
    EXPECT_GT(inner.in_use(), 0);  // `held` still holds it
    held = Tensor();
    EXPECT_EQ(inner.in_use(), 0);
  }
  EXPECT_FALSE(Tensor::allocate(DataType::kFloat32, {1024, 1024}).is_ok());  // the outer applies again
  {
    MemoryLimit none(0);  // 0: no limit
    EXPECT_TRUE(Tensor::allocate(DataType::kFloat32, {1024, 1024}).is_ok());
  }
}

std::string expand_model(int64_t n) {
  OnnxModelBuilder m(13);
  m.input("x", DataType::kFloat32, {1, 1});
  m.initializer("shape", Tensor::vector_int64({n, n}));
  m.node("Expand", {"x", "shape"}, {"e"});
  m.node("Relu", {"e"}, {"y"});
  m.output("y", DataType::kFloat32);
  return m.bytes();
}

TEST(MemoryLimit, BuildAndRunRespectIt) {
  auto e = Engine::build_from_onnx_bytes(expand_model(1024), BuilderConfig{}, "expand.onnx");
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  auto ctx = (*e)->create_context();
  ASSERT_TRUE(ctx.is_ok());
  Tensor x = Tensor::empty(DataType::kFloat32, {1, 1});
  x.set(0, 1.0);
  {
    MemoryLimit limit(1 << 20);
    std::map<std::string, Tensor> out;
    Status s = (*ctx)->run({{"x", x}}, out);
    ASSERT_FALSE(s.is_ok());
    EXPECT_EQ(s.code(), StatusCode::kOutOfMemory);
    EXPECT_NE(s.to_string().find("memory limit"), std::string::npos) << s.to_string();
    EXPECT_NE(s.to_string().find("Expand"), std::string::npos) << "names the node: " << s.to_string();
    EXPECT_EQ(s.to_string().find('\n'), std::string::npos);
  }
  {
    MemoryLimit limit(64 << 20);
    std::map<std::string, Tensor> out;
    ASSERT_TRUE((*ctx)->run({{"x", x}}, out).is_ok());
    EXPECT_EQ(out.at("y").numel(), 1024 * 1024);
  }
  // A build whose weights do not fit.
  OnnxModelBuilder m(13);
  m.input("x", DataType::kFloat32, {1 << 20});
  m.initializer("w", Tensor::empty(DataType::kFloat32, {1 << 20}));
  m.node("Add", {"x", "w"}, {"y"});
  m.output("y", DataType::kFloat32);
  MemoryLimit limit(1 << 20);
  auto b = Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "weights.onnx");
  ASSERT_FALSE(b.is_ok());
  EXPECT_NE(b.status().to_string().find("memory limit"), std::string::npos) << b.status().to_string();
}

// The command line: --max-memory on build and run, with size units.
int run_graft(const std::string& args, std::string* err) {
  const std::string err_path =
      (std::filesystem::temp_directory_path() / ("graft_mm_err_" + std::to_string(::getpid()))).string();
  const std::string cmd = std::string(GRAFT_BINARY_DIR) + "/bin/graft " + args + " > /dev/null 2> " + err_path;
  const int rc = std::system(cmd.c_str());
  FILE* f = std::fopen(err_path.c_str(), "r");
  err->clear();
  if (f) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) err->append(buf, n);
    std::fclose(f);
  }
  std::remove(err_path.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(MemoryLimit, CommandLineOption) {
  if (!std::filesystem::exists(std::string(GRAFT_BINARY_DIR) + "/bin/graft"))
    GTEST_SKIP() << "the graft command is not built in this build directory";
  const auto dir = std::filesystem::temp_directory_path() / ("graft_mm_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string model = (dir / "expand.onnx").string(), plan = (dir / "expand.plan").string();
  {
    std::FILE* f = std::fopen(model.c_str(), "wb");
    const std::string bytes = expand_model(1024);
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
  std::string err;
  EXPECT_EQ(run_graft("build " + model + " -o " + plan + " --max-memory 64MiB", &err), 0) << err;
  EXPECT_EQ(run_graft("run " + plan + " --iterations 1 --warmup 0 --max-memory 64MiB", &err), 0) << err;
  EXPECT_EQ(run_graft("run " + plan + " --iterations 1 --warmup 0 --max-memory 1MiB", &err), 1);
  EXPECT_NE(err.find("memory limit of 1048576 bytes"), std::string::npos) << err;
  EXPECT_EQ(run_graft("run " + plan + " --max-memory lots", &err), 1);
  EXPECT_NE(err.find("--max-memory"), std::string::npos) << err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace graft
