// The exported entry points of libgraft_tensorrt.so. Only virtual calls cross into TensorRT, so the
// library needs no libnvinfer symbols: trtexec --dynamicPlugins and IPluginRegistry::loadLibrary load
// it as it is (TensorRT 10+: getCreators; 8.x: getPluginCreators; both: setLoggerFinder).
#include <memory>
#include <vector>

#include "plugin_v2.h"
#include "plugin_v3.h"

namespace graft::trt {
namespace {
#if GRAFT_TRT_PLUGIN_V3
using Creator = GraftCreatorV3;
using CreatorBase = nvinfer1::IPluginCreatorInterface;
#else
using Creator = GraftCreatorV2;
using CreatorBase = nvinfer1::IPluginCreator;
#endif

// Built once; creators live as long as the process (TensorRT keeps pointers to them).
const std::vector<CreatorBase*>& creators() {
  static const std::vector<CreatorBase*> list = [] {
    std::vector<CreatorBase*> v;
    for (AdaptedOp& op : adapted_ops()) v.push_back(new Creator(std::move(op)));
    return v;
  }();
  return list;
}
}  // namespace

// The creators as TensorRT's entry points return them; never throws.
CreatorBase* const* creator_list(int32_t& nb_creators) noexcept {
  try {
    const auto& list = creators();
    nb_creators = static_cast<int32_t>(list.size());
    return list.data();
  } catch (...) {
    nb_creators = 0;
    return nullptr;
  }
}
}  // namespace graft::trt

extern "C" {

__attribute__((visibility("default"))) void setLoggerFinder(nvinfer1::ILoggerFinder* finder) {
  graft::trt::set_logger_finder(finder);
}

#if GRAFT_TRT_PLUGIN_V3
__attribute__((visibility("default"))) nvinfer1::IPluginCreatorInterface* const* getCreators(int32_t& nb_creators) {
  return graft::trt::creator_list(nb_creators);
}
#else
__attribute__((visibility("default"))) nvinfer1::IPluginCreator* const* getPluginCreators(int32_t& nb_creators) {
  return graft::trt::creator_list(nb_creators);
}
#endif

}  // extern "C"
