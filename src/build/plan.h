// The plan file: a serialized, optimized engine.
//
// Layout (little-endian):
//   "GRAFTPLN"                    8 bytes magic
//   uint32 format version         kPlanFormatVersion
//   uint32 n, n bytes             graft version string that wrote the plan
//   uint64 payload length
//   uint32 CRC32 (zlib) of the payload
//   payload: uint64 m, m bytes    the optimized graph as an ONNX ModelProto (protobuf)
//            uint64 k, k bytes    JSON: profiles, build options, device, IO info
// Every way a plan can be wrong has its own error: not a plan, other format version, truncated,
// corrupted (checksum), custom op not registered.
#pragma once

#include <string>

#include "runtime/cpu_engine.h"

namespace graft {

inline constexpr char kPlanMagic[8] = {'G', 'R', 'A', 'F', 'T', 'P', 'L', 'N'};
inline constexpr uint32_t kPlanFormatVersion = 1;

Result<std::string> write_plan_bytes(const EngineState& state);
Result<EngineState> read_plan_bytes(const std::string& bytes, const std::string& name_for_errors);

// Writes a temporary file in the same directory, then renames it over `path`.
Status write_file_atomic(const std::string& path, const std::string& bytes);

}  // namespace graft
