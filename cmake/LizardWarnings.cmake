# lizard_project_target(<target>): the flags every target of ours gets.
# Third-party headers come in as SYSTEM (see LizardDependencies.cmake), so
# -Werror only ever judges our own code.
function(lizard_project_target target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wnon-virtual-dtor
                                           -Wno-missing-field-initializers
                                           $<$<CXX_COMPILER_ID:GNU>:-Wshadow=local>
                                           # RapidJSON 1.1's member iterators compare
                                           # ambiguously under C++20's reversed operators;
                                           # clang warns at our call sites, not in its header.
                                           $<$<CXX_COMPILER_ID:Clang>:-Wno-ambiguous-reversed-operator>)
  if(LIZARD_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
