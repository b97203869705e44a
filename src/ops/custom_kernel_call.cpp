#include "ops/custom_kernel_call.h"

#include <algorithm>

namespace graft {

std::vector<int64_t> nchw_dims(std::vector<int64_t> d) {
  if (d.size() == 4) d = {d[0], d[3], d[1], d[2]};
  return d;
}

bool channels_last_io(const Node& node) {
  if (!node.custom_op || !node.custom_op->supports_channels_last_io()) return false;
  const AttrValue* v = node.attrs.find(kChannelsLastIoAttr);
  return v && std::holds_alternative<int64_t>(*v) && std::get<int64_t>(*v) == 1;
}

std::vector<ConcreteDesc> custom_input_descs(const Node& node, const std::vector<const Tensor*>& inputs) {
  const size_t declared = node.custom_op ? node.custom_op->inputs().size() : 0;
  const bool nhwc = channels_last_io(node);
  std::vector<ConcreteDesc> descs;
  for (size_t i = 0; i < std::max(inputs.size(), declared); ++i) {
    const Tensor* t = i < inputs.size() ? inputs[i] : nullptr;
    descs.push_back(t ? ConcreteDesc{t->dtype(), nhwc && i == 0 ? nchw_dims(t->dims()) : t->dims()} : ConcreteDesc{});
  }
  return descs;
}

CustomKernelCall custom_kernel_call(const ExecContext& ec) {
  const Node& node = *ec.node;
  CustomKernelCall call;
  call.context.attrs = &node.attrs;
  call.context.stream = ec.stream;
  call.inputs = custom_input_descs(node, ec.inputs);
  const bool nhwc = channels_last_io(node);
  call.context.channels_last_io = nhwc;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    const Tensor* t = i < ec.inputs.size() ? ec.inputs[i] : nullptr;
    call.context.inputs.push_back(t ? t->view() : TensorView{});
    if (t && nhwc && i == 0) call.context.inputs.back().dims = nchw_dims(t->dims());
  }
  for (const Tensor* t : ec.outputs) {
    const bool there = t && t->defined();
    call.context.outputs.push_back(there ? t->view() : TensorView{});
    call.outputs.push_back(there ? ConcreteDesc{t->dtype(), t->dims()} : ConcreteDesc{});
    if (there && nhwc && call.outputs.size() == 1) {
      call.context.outputs.back().dims = nchw_dims(t->dims());
      call.outputs.back().dims = nchw_dims(t->dims());
    }
  }
  return call;
}

}  // namespace graft
