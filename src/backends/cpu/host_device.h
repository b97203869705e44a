// The CPU reference's side of the shared drivers (ops/control_flow_driver.h, ops/container_driver.h):
// subgraphs run node by node on host tensors through run_node_cpu, containers share the tensors put
// in (values are immutable once made, so nothing is copied), slices and stacks are host copies.
#pragma once

#include <string>
#include <vector>

#include "ops/control_flow_driver.h"

namespace graft::cpu {

class HostDevice final : public SubgraphDevice {
 public:
  explicit HostDevice(ExecContext& ctx) : ctx_(ctx) {}
  Result<std::vector<Tensor>> run_subgraph(const std::string& attr, const Graph& sub,
                                           const std::vector<Tensor>& inputs) override;
  Result<bool> read_bool(const Tensor& t) override { return t.get(0) != 0; }
  Result<Tensor> keep(const Tensor& t) override { return t; }
  Result<Tensor> slice(const Tensor& x, size_t axis, int64_t begin, int64_t len, bool drop) override;
  Status place(Tensor& y, size_t axis, int64_t offset, const Tensor& src) override;
  Result<Tensor*> allocate_output(size_t o, DataType dtype, std::vector<int64_t> dims) override;
  Status set_output(size_t o, Tensor value) override { return set_output_value(ctx_, o, std::move(value)); }

 private:
  ExecContext& ctx_;
};

}  // namespace graft::cpu
