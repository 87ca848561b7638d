# lizard_project_target(<target>): the flags every target of ours gets.
# Third-party headers come in as SYSTEM (see LizardDependencies.cmake), so
# -Werror only ever judges our own code.
function(lizard_project_target target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wnon-virtual-dtor
                                           -Wno-missing-field-initializers
                                           $<$<CXX_COMPILER_ID:GNU>:-Wshadow=local>)
  if(LIZARD_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
