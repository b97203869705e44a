// The selection family: the ops that pick elements of a tensor by value along one axis. ArgMax and
// ArgMin give the index of the largest (smallest) element (ties: the first, or the last with
// select_last_index), Hardmax a one-hot of the first largest, TopK the k largest or smallest with
// their indices, sorted, ties in index order. NaN: a NaN first element is kept, otherwise NaN never
// wins ArgMax/ArgMin; TopK orders NaN above every number. One file per op: arg_max.cpp
// (ArgMax, ArgMin, Hardmax) and top_k.cpp (CPU references, schemas), arg_max.cu and top_k.cu (kernels
// and the CUDA ops, over selection_keys.cuh).
#pragma once

#include <vector>

#include "ops/operator.h"

namespace graft {

namespace cpu {

Status arg_max(ExecContext& ctx);
Status arg_min(ExecContext& ctx);
Status hardmax(ExecContext& ctx);
Status top_k(ExecContext& ctx);  // ties keep the lower index first

}  // namespace cpu
}  // namespace graft
