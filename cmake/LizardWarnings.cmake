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

# lizard_test_target(<target>): a test executable. As lizard_project_target,
# and its own files are compiled with LIZARD_TEST_CXX_FLAGS (-O0 -g1) in the
# optimized configurations: GoogleTest and gMock code is most of a test file's
# compile time, which optimization only lengthens (measured on era_test.cc:
# GCC 4.2 s at -O1 -g1, 3.2 s at -O0 -g1, 9 s at -O2 -g; clang with ASan
# 6.4 s at -O1, 2.9 s at -O0). The libraries a test links keep the
# configuration's flags, so the code under test is the code that ships.
function(lizard_test_target target)
  lizard_project_target(${target})
  lizard_override_optimization(${target} "${LIZARD_TEST_CXX_FLAGS}")
endfunction()

# lizard_suite_target(<target>): the conformance suite's own code (the code
# that judges a backend, not the backend). As lizard_project_target, with
# LIZARD_SUITE_CXX_FLAGS when set: the sanitizer preset compiles it at -O0,
# as its tests, and keeps the backends and the mock at -O1.
function(lizard_suite_target target)
  lizard_project_target(${target})
  lizard_override_optimization(${target} "${LIZARD_SUITE_CXX_FLAGS}")
endfunction()

function(lizard_override_optimization target flags_text)
  if(flags_text STREQUAL "")
    return()
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags_text}")
  target_compile_options(${target} PRIVATE "$<$<CONFIG:RelWithDebInfo,Release>:${flags}>")
endfunction()
