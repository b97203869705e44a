#include "ops/custom_kernel_call.h"

#include <algorithm>

namespace graft {

CustomKernelCall custom_kernel_call(const ExecContext& ec) {
  const Node& node = *ec.node;
  CustomKernelCall call;
  call.context.attrs = &node.attrs;
  call.context.stream = ec.stream;
  const size_t declared = node.custom_op ? node.custom_op->inputs().size() : 0;
  for (size_t i = 0; i < std::max(ec.inputs.size(), declared); ++i) {
    const Tensor* t = i < ec.inputs.size() ? ec.inputs[i] : nullptr;
    call.context.inputs.push_back(t ? t->view() : TensorView{});
    call.inputs.push_back(t ? ConcreteDesc{t->dtype(), t->dims()} : ConcreteDesc{});
  }
  for (const Tensor* t : ec.outputs) {
    const bool there = t && t->defined();
    call.context.outputs.push_back(there ? t->view() : TensorView{});
    call.outputs.push_back(there ? ConcreteDesc{t->dtype(), t->dims()} : ConcreteDesc{});
  }
  return call;
}

}  // namespace graft
