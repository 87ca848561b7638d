# The sources of lizard_conformance (the generic suite), listed explicitly.
set(LIZARD_CONFORMANCE_SOURCES
    src/suite/cmd_rules.cc
    src/suite/forwarding_backend.cc
    src/suite/fs_rules.cc
    src/suite/lizard_rules.cc
    src/suite/rule_bodies.cc
    src/suite/rule_context.cc
    src/suite/rules.cc
    src/suite/rules_env.cc
    src/suite/runner.cc
    src/suite/suite.cc)
