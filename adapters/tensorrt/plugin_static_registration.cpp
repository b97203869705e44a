// The static-registration variant (libgraft_tensorrt_static.so), for `trtexec --staticPlugins` or a
// plain dlopen into a process that already has libnvinfer loaded: a load-time initializer registers
// every graft creator with TensorRT's global plugin registry. getPluginRegistry resolves against the
// libnvinfer already in the process, so this library is still not linked against it.
// This is the one static initializer in graft, and the reason it exists is that TensorRT's
// static-plugin contract is exactly "register when loaded".
#include <NvInferRuntime.h>

#include "trt_common.h"

extern "C" {
#if GRAFT_TRT_PLUGIN_V3
nvinfer1::IPluginCreatorInterface* const* getCreators(int32_t& nb_creators);
#else
nvinfer1::IPluginCreator* const* getPluginCreators(int32_t& nb_creators);
#endif
}

namespace {
struct RegisterAllOnLoad {
  RegisterAllOnLoad() noexcept {
    try {
      nvinfer1::IPluginRegistry* registry = getPluginRegistry();
      if (!registry) return;
      int32_t n = 0;
#if GRAFT_TRT_PLUGIN_V3
      auto* const* list = getCreators(n);
#else
      auto* const* list = getPluginCreators(n);
#endif
      for (int32_t i = 0; i < n; ++i) {
#if GRAFT_TRT_PLUGIN_V3
        auto* c = static_cast<nvinfer1::IPluginCreatorV3One*>(list[i]);  // graft only makes V3One creators
#else
        auto* c = list[i];
#endif
        if (!registry->registerCreator(*list[i], c->getPluginNamespace()))
          graft::trt::log_error(c->getPluginName(), "registration with TensorRT's plugin registry failed");
      }
    } catch (...) {
    }
  }
};
const RegisterAllOnLoad register_all_on_load;
}  // namespace
