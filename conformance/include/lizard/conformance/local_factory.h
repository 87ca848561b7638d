// The conformance factory for LocalWorkspaceBackend (target
// lizard_conformance_local): each backend gets a fresh directory under one
// base directory that the factory makes and removes.
//
// Thread-safe.
#pragma once

#include <memory>
#include <string>

#include "lizard/conformance/backend_factory.h"

namespace lizard::conformance {

struct LocalFactoryOptions {
  // Where environments are made. Empty: a fresh directory under $TMPDIR
  // (or /tmp), removed when the factory is destroyed.
  std::string base_dir;
};

std::unique_ptr<BackendFactory> make_local_factory(LocalFactoryOptions options = {});

}  // namespace lizard::conformance
