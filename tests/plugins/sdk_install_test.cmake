# Installs graft to a fresh prefix, then configures and builds examples/plugin_example against it
# out of tree, exactly as a user would. Run with `cmake -P` by CTest (fixture graft_sdk); the
# example-plugin tests then load the library it built.
#
# Inputs: GRAFT_BINARY_DIR, GRAFT_SOURCE_DIR, WORK_DIR, GENERATOR, CXX_COMPILER.
foreach(v GRAFT_BINARY_DIR GRAFT_SOURCE_DIR WORK_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "sdk_install_test.cmake: -D${v}=... is required")
  endif()
endforeach()

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (exit ${rc}):\n${out}")
  endif()
  message(STATUS "${what}: ok")
endfunction()

set(prefix ${WORK_DIR}/prefix)
set(build ${WORK_DIR}/plugin_example_build)
file(REMOVE_RECURSE ${WORK_DIR})

run_step("cmake --install to ${prefix}" ${CMAKE_COMMAND} --install ${GRAFT_BINARY_DIR} --prefix ${prefix})
foreach(f include/graft/op.h include/graft/plugin.h include/graft/registry.h include/graft/status.h
          lib/cmake/graft/graftConfig.cmake lib/cmake/graft/graftConfigVersion.cmake
          lib/cmake/graft/graftTargets.cmake)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "the installed SDK lacks ${f}")
  endif()
endforeach()
file(GLOB libgraft ${prefix}/lib*/libgraft.so)
if(NOT libgraft)
  message(FATAL_ERROR "the installed SDK lacks libgraft.so")
endif()

# Only the prefix may provide graft: no package registry, no build tree.
run_step("configure examples/plugin_example against the installed SDK"
  ${CMAKE_COMMAND} -S ${GRAFT_SOURCE_DIR}/examples/plugin_example -B ${build} -G ${GENERATOR}
  -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix}
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
file(STRINGS ${build}/CMakeCache.txt graft_dir REGEX "^graft_DIR:")
if(NOT graft_dir MATCHES "${prefix}")
  message(FATAL_ERROR "graft was not found in the installed prefix: ${graft_dir}")
endif()
run_step("build the example plugin" ${CMAKE_COMMAND} --build ${build})
if(NOT EXISTS ${build}/libclamped_swish_plugin.so)
  message(FATAL_ERROR "the example build did not produce libclamped_swish_plugin.so")
endif()
