// What the sequence and optional ops mean, once for every backend (schemas: src/ops/sequence_ops.cpp).
// A sequence or optional is a host object (a Tensor of kind kSequence or kOptional*) holding tensors
// that live wherever the backend keeps them; the drivers here make and take them apart, and the
// backend's ContainerDevice moves the tensors: the CPU reference shares them as they are
// (src/backends/cpu/host_device.cpp), the CUDA backend keeps copies in device memory it owns
// (src/backends/cuda/control_flow_ops.cpp), since the engine's activation memory is reused.
#pragma once

#include <vector>

#include "ops/operator.h"

namespace graft {

class ContainerDevice {
 public:
  virtual ~ContainerDevice() = default;
  // A tensor a container may hold from now on: `t` itself where nothing reuses its memory, a copy
  // otherwise. A container is returned as it is (its tensors were kept when it was made).
  virtual Result<Tensor> keep(const Tensor& t) = 0;
  // x's elements [begin, begin + len) along `axis`, a new tensor (that axis dropped when `drop`).
  virtual Result<Tensor> slice(const Tensor& x, size_t axis, int64_t begin, int64_t len, bool drop) = 0;
  // y[..., offset : offset + n, ...] = src along `axis`, n = src's extent there (1 when src has
  // y's rank less one, the axis dropped).
  virtual Status place(Tensor& y, size_t axis, int64_t offset, const Tensor& src) = 0;
  // Output `o` of the node, allocated where the backend keeps outputs (nullptr: the node omits it).
  virtual Result<Tensor*> allocate_output(size_t o, DataType dtype, std::vector<int64_t> dims) = 0;
  // Output `o` of the node is `value`: a container as it is, a tensor copied (nothing for an
  // omitted output).
  virtual Status set_output(size_t o, Tensor value) = 0;
};

// ctx.node is the node and ctx.inputs its inputs; position and split inputs are read on the host.
Status run_sequence_empty(const ExecContext& ctx, ContainerDevice& dev);
Status run_sequence_construct(const ExecContext& ctx, ContainerDevice& dev);
Status run_sequence_insert(const ExecContext& ctx, ContainerDevice& dev);
Status run_sequence_at(const ExecContext& ctx, ContainerDevice& dev);
Status run_sequence_erase(const ExecContext& ctx, ContainerDevice& dev);
Status run_sequence_length(const ExecContext& ctx, ContainerDevice& dev);
Status run_split_to_sequence(const ExecContext& ctx, ContainerDevice& dev);
Status run_concat_from_sequence(const ExecContext& ctx, ContainerDevice& dev);
Status run_optional(const ExecContext& ctx, ContainerDevice& dev);
Status run_optional_has_element(const ExecContext& ctx, ContainerDevice& dev);
Status run_optional_get_element(const ExecContext& ctx, ContainerDevice& dev);

}  // namespace graft
