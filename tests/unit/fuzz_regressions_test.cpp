// Replays every reproducer in tests/data/fuzz_regressions (see its README.md): each model is
// imported and built for the CPU, described as JSON, serialized and loaded back, and run; each plan
// is loaded and run; each tensor file is read. Every file must end in the outcome listed below:
// success, or one clean error naming what is wrong. A crash, a sanitizer report (scripts/test.sh
// runs this binary under ASan + UBSan), an exception or a hang fails the test.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "graft/engine.h"
#include "io/tensor_io.h"
#include "tests/fuzz/fuzz_targets.h"

namespace graft {
namespace {

namespace fs = std::filesystem;

const fs::path kDir = fs::path(GRAFT_SOURCE_DIR) / "tests" / "data" / "fuzz_regressions";

// File -> the outcome: "ok", or words the (first) error must contain. A new reproducer needs a line.
const std::map<std::string, std::string>& expected_outcomes() {
  static const std::map<std::string, std::string> m = {
      {"C1_maxpool_slow_11s.onnx", "ok"},
      {"C6_range_float_to_int64_ub.onnx", "ok"},
      {"C7_range_int64_sub_overflow.onnx", "ok"},
      {"F1_json_type_error_describe_json.onnx", "attribute name '\\xafzis' is not valid UTF-8"},
      {"F2_json_type_error_serialize.onnx", "graph input name 'd\\x0b\\x01\\x9f\\xa0\\xcf' is not valid UTF-8"},
      {"F3_reshape_rank_bomb_fuzzer_artifact.onnx", "more than graft's limit of 64"},
      {"F3_reshape_rank_bomb_min.onnx", "rank 1000000000000 (from the declared length of a shape input)"},
      {"F4_split_scalar_axis.onnx", "is not valid UTF-8"},
      {"F5_dim_mul_overflow_crc_fixed.plan", "has more elements or bytes than fit in a 64-bit integer"},
      {"F5_dim_mul_overflow_fuzzer_artifact.plan", "checksum mismatch"},
      {"H1_scalar_axis_compress.onnx", "the input is a scalar (rank 0), which has no axes"},
      {"H1_scalar_axis_concat.onnx", "the input is a scalar (rank 0), which has no axes"},
      {"H1_scalar_axis_slice.onnx", "the input is a scalar (rank 0), which has no axes"},
      {"H1_scalar_axis_split.onnx", "the input is a scalar (rank 0), which has no axes"},
      {"H1_scalar_axis_squeeze.onnx", "the input is a scalar (rank 0), which has no axes"},
      {"H2_constantofshape_overflow.onnx", "has more elements or bytes than fit in a 64-bit integer"},
      {"H2_init_dims_overflow_gather_heap_leak.onnx", "tensor 'W' float32[4611686018427387904,4,1] has more"},
      {"H2_reshape_wrap_gather_oob.onnx", "shape [4611686018427387907,4] has more elements"},
      {"H3_init_huge_dims_alloc_before_check.onnx", "needs 4000000000000 bytes but its raw_data has 16"},
      {"H3_input_pb_huge_dims.pb", "expected 4000000000000"},
      {"H4_plan_profile_huge_opt.plan", "more than this machine's memory"},
      {"H4_run_expand_huge.onnx", "node 'Expand_0' (Expand): output 0 ('z'): a float32[1000000,1000000] tensor"},
      {"H4_run_huge_input_dims.onnx", "graph input 'x' has shape [1000000000000,1000000000000]"},
      {"H4_run_pad_huge.onnx", "node 'Pad_0' (Pad): output 0 ('z')"},
      {"H4_run_range_huge.onnx", "node 'Range_0' (Range): output 0 ('z')"},
      {"H4_run_resize_scale_huge.onnx", "shape [1,1,4000000000,4000000000] has more elements"},
      {"H5_external_data_abs_path.onnx", "external data location '/etc/passwd' is an absolute path"},
      {"H5_external_data_dotdot.onnx", "external data location '../../../../etc/passwd' contains '..'"},
      {"P2_passthrough.onnx", "ok"},
      {"convnet.onnx", "ok"},
      {"good_add.onnx", "ok"},
      {"good_add.plan", "ok"},
      {"good_dyn.plan", "ok"},
      // Found by the fuzz targets of tests/fuzz (README.md there).
      {"FZ1_attrs_float_bits_out_of_range.attrs", "serialized attribute 'fs' is malformed"},
      {"FZ2_npy_newline_in_header_key.npy", "expected ':' after key 'de\\n\\x0eopt2'"},
      {"FZ3_tcache_newline_in_key.tcache", "tactic entry 'conv|sm90|cudnn9\\n8c3h224w224|k64r7s7|fp[2' is malformed"},
      {"FZ4_opset7_output_not_computed.onnx",
       "output 'y' is not a graph input, an initializer or the output of any node"},
      {"FZ5_opset10_scatter_two_inputs.onnx", "the node does not match the Scatter of opset 10"},
      {"FZ6_resize_roi_extent_overflow.payload", "axis 2 would resize to an extent of 7.22419408e+28"},
      {"FZ7_opset10_qlinearconv_rank_mismatch.onnx",
       "'QLinearConv_0' (QLinearConv): weight w [1,1,1,1] must have the rank of x"},
      {"FZ8_opset6_convtranspose_weight_rank1.onnx", "PRelu from opset 6 to 7: the rank of the data is unknown"},
      {"FZ9_roialign_samples_past_int64.payload", "ok"},  // the UB was in the fuzz target's own run (replayed below)
      {"FZ10_resize_negative_scale_symbolic.payload", "'AveragePool_1' (AveragePool): attribute 'kernel_shape': is required"},
      {"FZ11_conv_empty_input_padded_output.payload", "ok"},
      {"FZ12_unseeded_random_uniform_like.payload", "ok"},  // the fuzz target's own oracle was wrong
      {"FZ13_resize_empty_output_huge_axis.onnx", "ok"},  // an empty output: nothing computed
      {"FZ14_pad_without_output.payload", "node 'Pad_0' (Pad): the node has no output 0, which Pad always has"},
      {"FZ15_pb_string_tensor_round_trip.pb", "ok"},             // the fuzz target's own oracle was wrong
      {"FZ16_if_sequence_output_round_trip.onnx", "ok"},         // likewise
      {"FZ17_scan8_unknown_batch_dim.onnx", "Scan from opset 8 to 9: Scan before opset 9 scans a batch axis"},
      {"FZ18_clip6_int_bound_out_of_range.onnx", "the graph has a cycle"},
      {"FZ19_avgpool_empty_channels_huge_spatial.onnx", "ok"},  // an empty output: no kernel runs
      // Scan-8 without num_scan_inputs: libonnx's inference is skipped for it, its converter refuses.
      {"FZ20_scan8_missing_num_scan_inputs.onnx", "default-domain opset 6 cannot be converted to opset 11"},
      {"FZ21_prelu_int64_product_overflow.onnx", "ok"},  // the int64 product wraps, as Mul's does
      {"FZ22_pow_uint8_power_out_of_range.onnx", "ok"},  // the power keeps its low bits
      {"FZ23_stft_rank1_signal_opset6.onnx", "RNN from opset 6 to 7: the operator changed there"},
      {"FZ24_maxunpool_rank0_indices_opset6.onnx", "default-domain opset 6 cannot be converted to opset 11"},
  };
  return m;
}

// Inputs at the static dims, or at the profile's opt shape (as `graft run` generates them), filled
// with a small deterministic pattern. Allocation goes through Tensor::allocate: a huge opt shape is
// an error, not a crash.
Status run_engine(const Engine& e) {
  std::map<std::string, Tensor> inputs;
  for (const IOInfo& in : e.inputs()) {
    std::vector<int64_t> dims = in.profile ? in.profile->opt : in.static_dims;
    for (int64_t d : dims)
      if (d < 0) return Status::ok();  // dynamic without a profile: nothing to run
    GRAFT_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(in.dtype, dims));
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, static_cast<double>(i % 7) - 3.0);
    inputs[in.name] = t;
  }
  GRAFT_ASSIGN_OR_RETURN(auto ctx, e.create_context());
  std::map<std::string, Tensor> outputs;
  GRAFT_RETURN_IF_ERROR(ctx->run(inputs, outputs));
  for (const IOInfo& out : e.outputs())
    if (!outputs.count(out.name) || !outputs[out.name].defined())
      return error(StatusCode::kInternal, "output '", out.name, "' missing after a successful run");
  return Status::ok();
}

// Everything a user can do with an engine from a model or plan: describe, save, load back, run.
Status exercise(const Engine& e) {
  const std::string json = e.describe_json();
  if (nlohmann::json::parse(json, nullptr, false).is_discarded())
    return error(StatusCode::kInternal, "describe_json() is not valid JSON");
  (void)e.describe();
  GRAFT_ASSIGN_OR_RETURN(std::string plan, e.serialize());
  GRAFT_ASSIGN_OR_RETURN(auto again, Engine::deserialize(plan, "roundtrip.plan"));
  GRAFT_RETURN_IF_ERROR(run_engine(e));
  return run_engine(*again);
}

// The fuzz target (tests/fuzz/fuzz_targets.h) that reads a file of this kind, by extension:
// .onnx, .plan, .payload (a plan's bytes behind the checksum), .tcache (timing cache), .npy and .pb,
// .attrs (serialized custom-op attributes).
using FuzzTarget = fuzz::Outcome (*)(const uint8_t*, size_t);
FuzzTarget fuzz_target_for(const fs::path& file) {
  const std::string ext = file.extension().string();
  if (ext == ".onnx") return &fuzz::onnx_build;
  if (ext == ".plan") return &fuzz::plan_load;
  if (ext == ".payload") return &fuzz::plan_payload_load;
  if (ext == ".tcache") return &fuzz::timing_cache_parse;
  if (ext == ".npy" || ext == ".pb") return &fuzz::tensor_file_read;
  if (ext == ".attrs") return &fuzz::attributes_validate;
  return nullptr;
}

Status replay(const fs::path& file) {
  const std::string ext = file.extension().string();
  if (ext == ".onnx") {
    GRAFT_ASSIGN_OR_RETURN(auto e, Engine::build_from_onnx_file(file.string(), BuilderConfig{}));
    return exercise(*e);
  }
  if (ext == ".plan") {
    GRAFT_ASSIGN_OR_RETURN(auto e, Engine::load_plan(file.string()));
    return exercise(*e);
  }
  if (ext == ".pb") return io::read_tensor_file(file.string()).status();
  // Inputs saved by the other fuzz targets: their outcome is what the target's function answers.
  if (auto target = fuzz_target_for(file)) {
    GRAFT_ASSIGN_OR_RETURN(std::string bytes, io::read_file(file.string()));
    return target(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()).status;
  }
  return error(StatusCode::kInternal, "unknown reproducer kind '", ext, "'");
}

TEST(FuzzRegressions, EveryReproducerEndsInItsCleanOutcome) {
  ASSERT_TRUE(fs::is_directory(kDir)) << kDir;
  int replayed = 0;
  for (const auto& entry : fs::directory_iterator(kDir)) {
    const fs::path file = entry.path();
    const std::string name = file.filename().string();
    if (name == "README.md") continue;
    SCOPED_TRACE(name);
    auto it = expected_outcomes().find(name);
    ASSERT_NE(it, expected_outcomes().end()) << "no expected outcome listed for " << name;
    const auto t0 = std::chrono::steady_clock::now();
    Status st;
    try {
      st = replay(file);
    } catch (const std::exception& ex) {
      FAIL() << "an exception crossed a Status API: " << ex.what();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // Generous for sanitizer builds; the slowest (C1's MaxPool, once 11 s) takes milliseconds in Release.
    EXPECT_LT(seconds, 20.0);
    ++replayed;
    if (it->second == "ok") {
      EXPECT_TRUE(st.is_ok()) << st.to_string();
      continue;
    }
    ASSERT_FALSE(st.is_ok()) << "expected an error containing: " << it->second;
    const std::string msg = st.to_string();
    EXPECT_NE(msg.find(it->second), std::string::npos) << msg;
    // One line, but for graft's own indented list lines ("...:\n  item"; graft/status.h).
    for (size_t nl = msg.find('\n'); nl != std::string::npos; nl = msg.find('\n', nl + 1))
      EXPECT_EQ(msg.compare(nl, 3, "\n  "), 0) << "errors are one line: " << msg;
    if ((file.extension() == ".onnx" || file.extension() == ".plan") && name.rfind("H4_", 0) != 0)
      EXPECT_NE(msg.find(name), std::string::npos) << "a load/build error names the file: " << msg;
  }
  EXPECT_EQ(replayed, static_cast<int>(expected_outcomes().size())) << "a listed reproducer is missing";
}

// Every file also goes through the fuzz target that reads its kind, exactly as the fuzzer ran it:
// no violation of graft's rules (an exception across a Status API, a multi-line error, an engine
// whose plan does not load back or runs differently, a round trip that changes a file's content).
TEST(FuzzRegressions, EveryReproducerPassesItsFuzzTarget) {
  for (const auto& entry : fs::directory_iterator(kDir)) {
    const fs::path file = entry.path();
    FuzzTarget target = fuzz_target_for(file);
    if (file.filename() == "README.md") continue;
    SCOPED_TRACE(file.filename().string());
    ASSERT_NE(target, nullptr) << "no fuzz target reads this kind of file";
    auto bytes = io::read_file(file.string());
    ASSERT_TRUE(bytes.is_ok()) << bytes.status().to_string();
    const auto t0 = std::chrono::steady_clock::now();
    const fuzz::Outcome out = target(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size());
    EXPECT_TRUE(out.violation.empty()) << out.violation;
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20.0);
  }
}

}  // namespace
}  // namespace graft
