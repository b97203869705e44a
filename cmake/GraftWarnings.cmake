# Warning and sanitizer flags shared by every graft target: graft_set_warnings(target).
function(graft_set_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict>>)
  if(GRAFT_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()

if(GRAFT_SANITIZE)
  add_compile_options(-fsanitize=${GRAFT_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${GRAFT_SANITIZE})
endif()
