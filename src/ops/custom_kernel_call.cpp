#include "ops/custom_kernel_call.h"

#include <algorithm>

namespace graft {

CustomKernelCall custom_kernel_call(const Node& node, const std::vector<const Tensor*>& inputs,
                                    const std::vector<Tensor>& outputs) {
  CustomKernelCall call;
  call.context.attrs = &node.attrs;
  const size_t declared = node.custom_op ? node.custom_op->inputs().size() : 0;
  for (size_t i = 0; i < std::max(inputs.size(), declared); ++i) {
    const Tensor* t = i < inputs.size() ? inputs[i] : nullptr;
    call.context.inputs.push_back(t ? t->view() : TensorView{});
    call.inputs.push_back(t ? ConcreteDesc{t->dtype(), t->dims()} : ConcreteDesc{});
  }
  for (const Tensor& t : outputs) {
    call.context.outputs.push_back(t.defined() ? t.view() : TensorView{});
    call.outputs.push_back(t.defined() ? ConcreteDesc{t.dtype(), t.dims()} : ConcreteDesc{});
  }
  return call;
}

}  // namespace graft
