// The plan file: a serialized, optimized engine.
//
// Layout (little-endian):
//   "GRAFTPLN"                    8 bytes magic
//   uint32 format version         kPlanFormatVersion, or kPlanFormatVersionOneProfile (below)
//   uint32 n, n bytes             graft version string that wrote the plan
//   uint64 payload length
//   uint32 CRC32 (zlib) of every other byte of the file: the header before it, then the payload
//   payload: uint64 m, m bytes    the optimized graph as an ONNX ModelProto (protobuf)
//            uint64 k, k bytes    JSON: profiles, build options, device, IO info
// Format 3 adds several optimization profiles: its JSON "profiles" is an array of objects (profile
// k at index k, each {input: {min, opt, max}}), where formats 1 and 2 have one such object. A plan
// with one profile is still written as format 2, which older graft reads; one with several is
// format 3, which older graft refuses with its format-version error instead of silently running
// profile 0 alone.
// Format 4 has format 2's or 3's layout, and a graph that may hold the view chains of dynamic-shape
// engines (GraftViewChain, GraftAttention's chain form: src/ops/views/views.h), which graft before
// format 4 does not know and would misread; a plan without them is still written as format 2 or 3.
// Format 5 has format 2's or 3's layout, and a graph whose internal ops (GraftConv, ...) are in
// their own domain, kInternalDomain (ops/internal_ops.h), where formats 2 to 4 kept them in the
// default domain. Older graft would take such a node for an unregistered custom op; format 5 makes
// it say the format is too new instead. A plan of formats 2 to 4 still loads: its default-domain
// internal ops are moved to their domain as it is read. A plan without internal ops is still
// written as format 2 or 3.
// Format 6 has format 5's layout and a graph whose internal ops use attributes that graft before
// format 6 would ignore and so run wrongly: GraftConv's input_activation (a producer's activation
// deferred to its depthwise reader) and GraftChannelsLast's block (a space-to-depth stem). A graph
// without them is still written as format 5 (or 2 or 3).
// Format 1 (read, no longer written) had the same layout with a CRC of the payload only, so a
// changed byte in the header's version string went unnoticed. In format 2 any change of one byte
// (indeed any burst of up to 32 bits) fails to load: tests/unit/plan_test.cpp flips every byte.
// Every way a plan can be wrong has its own error: not a plan, other format version, truncated,
// corrupted (checksum), custom op not registered.
#pragma once

#include <string>

#include "plan/engine_state.h"

namespace onnx {
class GraphProto;
}  // namespace onnx

namespace graft {

inline constexpr char kPlanMagic[8] = {'G', 'R', 'A', 'F', 'T', 'P', 'L', 'N'};
inline constexpr uint32_t kPlanFormatVersion = 7;            // newest: custom ops kept channels-last, a marker older graft ignores
inline constexpr uint32_t kPlanFormatVersionInternalAttrs = 6;   // internal ops with attributes graft before 6 ignores
inline constexpr uint32_t kPlanFormatVersionInternalDomain = 5;  // written for a graph with internal ops
inline constexpr uint32_t kPlanFormatVersionViewChains = 4;   // still read: view chains in the default domain
inline constexpr uint32_t kPlanFormatVersionProfiles = 3;     // written for several profiles
inline constexpr uint32_t kPlanFormatVersionOneProfile = 2;   // written for one profile
inline constexpr uint32_t kPlanFormatVersionPayloadCrc = 1;   // still read

Result<std::string> write_plan_bytes(const EngineState& state);
Result<EngineState> read_plan_bytes(const std::string& bytes, const std::string& name_for_errors);
// The part of read_plan_bytes behind the checksum: the payload alone (graph and JSON sections).
// Exposed for the fuzz target that reaches the parser without having to forge a checksum.
Result<EngineState> read_plan_payload(const std::string& payload, const std::string& name_for_errors);

// Plans of formats 2 to 4 kept graft's internal ops in the default domain: moves them to their own
// (kInternalDomain), as reading such a plan does.
void move_internal_ops_to_their_domain(onnx::GraphProto* graph);

// Writes a temporary file in the same directory, then renames it over `path`.
Status write_file_atomic(const std::string& path, const std::string& bytes);

}  // namespace graft
