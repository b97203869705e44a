# Warning and sanitizer flags shared by every graft target: graft_set_warnings(target).
function(graft_set_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict>>)
  if(GRAFT_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()

if(GRAFT_FUZZ)
  # libFuzzer's coverage instrumentation everywhere; the fuzz executables add -fsanitize=fuzzer
  # (libFuzzer's main) at link time (tests/fuzz/CMakeLists.txt).
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "GRAFT_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  if(GRAFT_SANITIZE)
    message(FATAL_ERROR "GRAFT_FUZZ sets its own sanitizers (address,undefined); leave GRAFT_SANITIZE empty")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=address,undefined)
elseif(GRAFT_SANITIZE)
  # "thread" (ThreadSanitizer) cannot be combined with address; scripts/test.sh builds it apart.
  add_compile_options(-fsanitize=${GRAFT_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${GRAFT_SANITIZE})
endif()
