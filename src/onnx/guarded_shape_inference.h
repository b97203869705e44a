// libonnx's shape inference, with the inference functions it gets wrong on malformed nodes guarded.
//
// libonnx 1.12 (Debian 12) indexes attribute vectors by the weight's rank in its Conv/pooling
// inference (convPoolShapeInference): a QLinearConv whose input has rank 3 and weight rank 4 read
// past the strides vector, SIGSEGV (fuzz_onnx_build, FZ7); its Scan-8 inference dereferences a
// missing `num_scan_inputs` (FZ20). The opset converter runs this inference on models from files, so
// every default-domain schema is served through a registry whose inference first checks what the
// original assumes (required attributes present; for the convolutions and pools, ranks and attribute
// lengths; for Scan, its input counts), and fails inference cleanly otherwise.
#pragma once

namespace onnx {
class ModelProto;
}

namespace graft {

// onnx::shape_inference::InferShapes(model) with the guarded schemas; throws what it throws.
void infer_shapes_guarded(onnx::ModelProto& model);

}  // namespace graft
