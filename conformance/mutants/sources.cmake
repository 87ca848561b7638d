# The sources of lizard_conformance_mutants, listed explicitly.
set(LIZARD_MUTANTS_SOURCES
    src/catalogue.cc
    src/env_command_mutants.cc
    src/file_mutants.cc
    src/hostile_mutants.cc
    src/lizard_mutants.cc
    src/mutant_factory.cc
    src/mutant_support.cc)
