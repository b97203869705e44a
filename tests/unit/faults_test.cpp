// Faults: a plan or a timing cache written by a process that is killed (kill -9) at a random point
// is, afterwards, either the old complete file or absent, never a torn file; the killed writer's
// temporary is removed by the next write. (graft writes a temporary beside the target, fsyncs it
// and renames it over: io::write_file_atomic.)
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "graft/engine.h"
#include "io/tensor_io.h"
#include "plan/tactics.h"
#include "tests/unit/onnx_model_builder.h"

namespace graft {
namespace {

namespace fs = std::filesystem;
using testing::OnnxModelBuilder;

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("graft_faults_" + std::to_string(::getpid()) + "_" +
                                        std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// An engine with `mb` MiB of weights, all equal to `fill` (so two engines' plans differ).
std::shared_ptr<Engine> engine_with_weights(int mb, float fill) {
  OnnxModelBuilder m;
  const int64_t n = int64_t{mb} << 18;  // floats
  m.input("x", DataType::kFloat32, {n});
  Tensor w = Tensor::empty(DataType::kFloat32, {n});
  for (int64_t i = 0; i < n; ++i) w.data_as<float>()[i] = fill;
  m.initializer("w", w);
  m.node("Add", {"x", "w"}, {"y"});
  m.output("y", DataType::kFloat32);
  auto e = Engine::build_from_onnx_bytes(m.bytes(), BuilderConfig{}, "weights.onnx");
  EXPECT_TRUE(e.is_ok()) << e.status().to_string();
  return e.is_ok() ? *e : nullptr;
}

int count_temporaries(const fs::path& dir) {
  int n = 0;
  for (const auto& f : fs::directory_iterator(dir))
    if (f.path().filename().string().find(".tmp.") != std::string::npos) ++n;
  return n;
}

// Forks a child that runs `write` and SIGKILLs it after `delay_us`; returns once it is reaped.
// Returns whether the child finished on its own before the kill.
template <typename F>
bool write_and_kill(F&& write, int delay_us) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const bool ok = write();
    ::_exit(ok ? 0 : 3);
  }
  EXPECT_GT(pid, 0);
  if (pid <= 0) return false;
  ::usleep(static_cast<useconds_t>(delay_us));
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status)) EXPECT_EQ(WEXITSTATUS(status), 0) << "the writer failed on its own";
  return WIFEXITED(status);
}

TEST(Faults, PlanWriterKilledAtRandomPointsLeavesTheOldFileOrNone) {
  TempDir dir;
  const fs::path plan = dir.path / "model.plan";
  auto a = engine_with_weights(8, 1.0f), b = engine_with_weights(8, 2.0f);
  ASSERT_TRUE(a && b);
  const std::string bytes_a = *a->serialize(), bytes_b = *b->serialize();
  ASSERT_NE(bytes_a, bytes_b);
  // How long one write takes here, to spread the kills over it (and a little beyond).
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(b->save_plan((dir.path / "timing.plan").string()).is_ok());
  const int write_us = std::max<int>(
      1000, static_cast<int>(std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count()));
  fs::remove(dir.path / "timing.plan");

  std::mt19937 rng(20261201);
  int killed = 0, finished = 0;
  for (int round = 0; round < 30; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    // Round 0 starts with no file: afterwards it is absent or the new complete plan.
    const bool had_old = round > 0;
    if (had_old) ASSERT_TRUE(a->save_plan(plan.string()).is_ok());
    const int delay = std::uniform_int_distribution<int>(0, write_us * 3 / 2)(rng);
    const bool done = write_and_kill([&] { return b->save_plan(plan.string()).is_ok(); }, delay);
    (done ? finished : killed)++;
    if (!fs::exists(plan)) {
      EXPECT_FALSE(had_old) << "the old plan disappeared";
      continue;
    }
    const std::string now = slurp(plan);
    ASSERT_TRUE(now == bytes_b || (had_old && now == bytes_a))
        << "a torn plan of " << now.size() << " bytes (old " << bytes_a.size() << ", new " << bytes_b.size() << ")";
    auto loaded = Engine::load_plan(plan.string());
    EXPECT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  }
  EXPECT_GT(killed, 0) << "no write was interrupted (" << write_us << " us per write)";
  // The next write removes the temporaries the killed writers left.
  ASSERT_TRUE(a->save_plan(plan.string()).is_ok());
  EXPECT_EQ(count_temporaries(dir.path), 0);
  std::printf("[ faults   ] plan writes: %d killed, %d finished (%d us per write)\n", killed, finished, write_us);
}

TEST(Faults, TimingCacheWriterKilledAtRandomPointsLeavesTheOldFileOrNone) {
  TempDir dir;
  const fs::path cache = dir.path / "timing.cache";
  TacticTable a, b;
  for (int i = 0; i < 60000; ++i) {
    a.put("conv|sm90|layer" + std::to_string(i), Tactic{i % 7, 0, 0.5});
    b.put("conv|sm90|layer" + std::to_string(i), Tactic{i % 5, 1, 0.25});
  }
  ASSERT_TRUE(b.save_cache_file(cache.string()).is_ok());
  const std::string bytes_b = slurp(cache);
  ASSERT_TRUE(a.save_cache_file(cache.string()).is_ok());
  const std::string bytes_a = slurp(cache);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(b.save_cache_file((dir.path / "t.cache").string()).is_ok());
  const int write_us = std::max<int>(
      1000, static_cast<int>(std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count()));
  fs::remove(dir.path / "t.cache");
  std::mt19937 rng(7);
  int killed = 0;
  for (int round = 0; round < 20; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    ASSERT_TRUE(a.save_cache_file(cache.string()).is_ok());
    const int delay = std::uniform_int_distribution<int>(0, write_us * 3 / 2)(rng);
    if (!write_and_kill([&] { return b.save_cache_file(cache.string()).is_ok(); }, delay)) ++killed;
    ASSERT_TRUE(fs::exists(cache)) << "the old cache disappeared";
    const std::string now = slurp(cache);
    ASSERT_TRUE(now == bytes_a || now == bytes_b) << "a torn cache of " << now.size() << " bytes";
    EXPECT_TRUE(TacticTable::load_cache_file(cache.string()).is_ok());
  }
  EXPECT_GT(killed, 0);
  ASSERT_TRUE(a.save_cache_file(cache.string()).is_ok());
  EXPECT_EQ(count_temporaries(dir.path), 0);
}

}  // namespace
}  // namespace graft
