# lizard_project_target(<target>): the standard and the flags every target of
# ours gets. C++20 is a PUBLIC compile feature, so a consumer linking one of
# our libraries gets it too (nothing is set globally).
# Third-party headers come in as SYSTEM (see LizardDependencies.cmake), so
# -Werror only ever judges our own code.
function(lizard_project_target target)
  target_compile_features(${target} PUBLIC cxx_std_20)
  set_target_properties(${target} PROPERTIES CXX_EXTENSIONS OFF)
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
