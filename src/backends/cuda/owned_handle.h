// A move-only owner of one vendor-library object (a cuDNN descriptor, a cuBLASLt layout, ...),
// destroyed by the library's own destroy call when its owner goes. The libraries' handle types
// are pointers to opaque structs, so std::unique_ptr holds them; cudnn_wrap.h and
// cublaslt_wrap.h name one owner per kind of object.
#pragma once

#include <memory>
#include <type_traits>

namespace graft::cuda {

// Calls kDestroy on a non-null handle; its status is not looked at: nothing could be done about
// it in a destructor.
template <auto kDestroy>
struct DestroyWith {
  template <typename P>
  void operator()(P* p) const {
    (void)kDestroy(p);
  }
};

template <typename Handle, auto kDestroy>
using OwnedHandle = std::unique_ptr<std::remove_pointer_t<Handle>, DestroyWith<kDestroy>>;

}  // namespace graft::cuda
