// What the Lizard factories' sessions share (lizard_factory.cc,
// live_factory.cc): backends from one set of LizardOptions, and overrides
// applied to those options.
#pragma once

#include "lizard/conformance/backend_factory.h"
#include "lizard/conformance/platform_control.h"
#include "lizard/workspace/lizard_sandbox_backend.h"

namespace lizard::conformance::internal {

// `options` with the set fields of `o` replacing its own.
inline workspace::LizardOptions apply(workspace::LizardOptions options, const BackendOverrides& o) {
  if (o.size) options.size = *o.size;
  if (o.lifetime) options.lifetime = *o.lifetime;
  if (!o.env.empty()) options.env = o.env;
  if (o.api_key) options.api_key = *o.api_key;
  if (o.ref) options.ref = o.ref;
  return options;
}

// Backends built from options_; the Lizard sandbox's capabilities and deviations.
class LizardSession : public BackendSession {
 public:
  std::unique_ptr<WorkspaceBackend> make() override {
    return std::make_unique<workspace::LizardSandboxBackend>(options_);
  }
  std::unique_ptr<WorkspaceBackend> attach(const WorkspaceRef& ref) override {
    workspace::LizardOptions options = options_;
    options.ref = ref;
    return std::make_unique<workspace::LizardSandboxBackend>(options);
  }
  bool can_attach() const override { return true; }
  Capabilities capabilities() const override {
    return {Capability::kCommands, Capability::kFilesystem, Capability::kRealpath};
  }
  Deviations deviations() const override {
    Deviations d;
    d.commands_run_as_root = true;
    d.commands_have_own_filesystem = true;  // each sandbox has its own root
    return d;
  }
  std::vector<std::string> secrets() const override { return {options_.api_key}; }

 protected:
  workspace::LizardOptions options_;
};

}  // namespace lizard::conformance::internal
