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
# and its own files are compiled with LIZARD_TEST_CXX_FLAGS (-O1 -g1) in the
# optimized configurations: GoogleTest and gMock code is most of a test file's
# compile time, and at -O2 -g it doubles (measured: 9.0 s against 4.7 s for
# lizard_backend_test.cc). The sanitizer preset takes -O0 -g1 (an
# instrumented test file compiles in 2.9 s at -O0 against 6.4 s at -O1). The
# libraries a test links keep the configuration's flags, so the code under
# test is the code that ships.
function(lizard_test_target target)
  lizard_project_target(${target})
  separate_arguments(flags UNIX_COMMAND "${LIZARD_TEST_CXX_FLAGS}")
  target_compile_options(${target} PRIVATE "$<$<CONFIG:RelWithDebInfo,Release>:${flags}>")
endfunction()
