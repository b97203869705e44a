#include "ops/custom_kernel_call.h"

#include <algorithm>

namespace graft {

std::vector<ConcreteDesc> custom_input_descs(const Node& node, const std::vector<const Tensor*>& inputs) {
  const size_t declared = node.custom_op ? node.custom_op->inputs().size() : 0;
  std::vector<ConcreteDesc> descs;
  for (size_t i = 0; i < std::max(inputs.size(), declared); ++i) {
    const Tensor* t = i < inputs.size() ? inputs[i] : nullptr;
    descs.push_back(t ? ConcreteDesc{t->dtype(), t->dims()} : ConcreteDesc{});
  }
  return descs;
}

CustomKernelCall custom_kernel_call(const ExecContext& ec) {
  const Node& node = *ec.node;
  CustomKernelCall call;
  call.context.attrs = &node.attrs;
  call.context.stream = ec.stream;
  call.inputs = custom_input_descs(node, ec.inputs);
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    const Tensor* t = i < ec.inputs.size() ? ec.inputs[i] : nullptr;
    call.context.inputs.push_back(t ? t->view() : TensorView{});
  }
  for (const Tensor* t : ec.outputs) {
    const bool there = t && t->defined();
    call.context.outputs.push_back(there ? t->view() : TensorView{});
    call.outputs.push_back(there ? ConcreteDesc{t->dtype(), t->dims()} : ConcreteDesc{});
  }
  return call;
}

}  // namespace graft
