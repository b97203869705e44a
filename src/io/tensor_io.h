// Tensor files: NumPy .npy and ONNX TensorProto .pb, read into and written from graft::Tensor.
//
// Used by the `graft` command line (--inputs, --save-outputs, --compare) and the ONNX conformance
// runner (test_data_set_*/input_*.pb). Errors name the file. Writers are atomic: they write a
// temporary file beside the target and rename it over, so a reader never sees half a file.
#pragma once

#include <string>

#include "graft/status.h"
#include "graft/tensor.h"

namespace onnx {
class TensorProto;
}

namespace graft::io {

// A tensor with the name its file gave it ("" for .npy, which carries no name).
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

// ---- NumPy .npy (format versions 1.0, 2.0 and 3.0; little-endian, C order) ----
// dtypes: f2 f4 f8 i1 u1 i4 i8 b1. Fortran order, big-endian data, other dtypes and truncated data
// are errors naming the file.
Result<Tensor> read_npy(const std::string& path);
Result<Tensor> parse_npy(const std::string& bytes, const std::string& name_for_errors);
// Host tensors only; bfloat16 has no NumPy dtype and is refused.
Result<std::string> encode_npy(const Tensor& tensor);
Status write_npy(const std::string& path, const Tensor& tensor);

// ---- ONNX TensorProto (.pb) ----
// Reads raw_data or the typed fields (float_data, int32_data, int64_data, double_data, uint64_data).
Result<NamedTensor> read_tensor_pb(const std::string& path);
Result<NamedTensor> parse_tensor_pb(const std::string& bytes, const std::string& name_for_errors);
// Writes raw_data (little-endian).
Result<std::string> encode_tensor_pb(const Tensor& tensor, const std::string& name);
// The packed bytes of an int4/uint4 TensorProto of `numel` elements (two a byte, dtype.h) from its
// raw_data or its int32_data (one packed byte an entry), checked against numel before anything is
// allocated; for unpack_4bit. Shared with the importer's reader (src/onnx), which also reads
// external data. Errors (kInvalidArgument) name the tensor and the packing.
Result<std::string> packed_4bit_of(const onnx::TensorProto& p, int64_t numel);
Status write_tensor_pb(const std::string& path, const Tensor& tensor, const std::string& name);

// ---- ONNX SequenceProto / OptionalProto (.pb): the backend suite's non-tensor values ----
// The file does not say which proto it holds; `declared` (the graph value's type) does: a tensor
// (read_tensor_pb), a sequence of tensors, an optional tensor or an optional sequence of tensors.
// An empty sequence or optional takes its dtype from `declared`; a tensor of another dtype is an
// error. Maps, sparse tensors and nested sequences are kUnsupported.
Result<NamedTensor> parse_value_pb(const std::string& bytes, const TensorDesc& declared,
                                   const std::string& name_for_errors);
Result<NamedTensor> read_value_pb(const std::string& path, const TensorDesc& declared);

// Either format, recognised by content (the .npy magic) rather than by extension.
Result<NamedTensor> read_tensor_file(const std::string& path);

// ---- files ----
// The whole file, read with one allocation.
Result<std::string> read_file(const std::string& path);
// Writes to "<path>.tmp.<pid>.<n>" and renames it over `path`; the temporary is removed on failure.
Status write_file_atomic(const std::string& path, const std::string& bytes);

// A file-name-safe form of a tensor name: keeps [A-Za-z0-9._-], replaces the rest with '_',
// never empty, never "." or "..".
std::string sanitize_file_name(const std::string& name);

}  // namespace graft::io
