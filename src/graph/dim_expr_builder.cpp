// DimExprBuilder is header-only; this file keeps the folder's one-class-one-unit layout.
#include "graph/dim_expr_builder.h"
