// Every op case table the harness runs: each tests/ops/cases_<name>.cpp defines
// std::vector<OpCaseTable> <name>_case_tables(), and CMake writes the list of those files
// (case_files.inc, tests/ops/CMakeLists.txt), so adding a case file registers it.
// OpCoverage.EveryRegisteredOpHasCases (custom ops) and EveryBuiltinOpHasCasesOrIsListedAsPending
// (builtin ops) fail until an op has its table.
#include "harness.h"

namespace graft::optest {

#define GRAFT_CASE_FILE(name) std::vector<OpCaseTable> name##_case_tables();
#include "case_files.inc"
#undef GRAFT_CASE_FILE

std::vector<OpCaseTable> all_case_tables() {
  std::vector<OpCaseTable> tables;
#define GRAFT_CASE_FILE(name) \
  for (OpCaseTable& t : name##_case_tables()) tables.push_back(std::move(t));
#include "case_files.inc"
#undef GRAFT_CASE_FILE
  return tables;
}

}  // namespace graft::optest
