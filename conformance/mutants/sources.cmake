# The sources of lizard_conformance_mutants, listed explicitly.
set(LIZARD_MUTANTS_SOURCES
    src/catalogue.cc
    src/common_mutants.cc
    src/lizard_mutants.cc
    src/mutant_factory.cc)
