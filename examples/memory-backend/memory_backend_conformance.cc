// The whole conformance suite against MemoryBackend: one GoogleTest test per
// rule of the contract, registered by one macro.
#include <memory>

#include "lizard/conformance/suite.h"
#include "memory_backend.h"

namespace {

using lizard::conformance::BackendFactory;
using lizard::conformance::BackendSession;
using lizard::conformance::RuleInfo;
using lizard::workspace::Capabilities;
using lizard::workspace::Capability;
using lizard::workspace::WorkspaceBackend;
using lizard::workspace::WorkspaceRef;

class MemorySession : public BackendSession {
 public:
  std::unique_ptr<WorkspaceBackend> make() override {
    return std::make_unique<memory_backend::MemoryBackend>();
  }
  std::unique_ptr<WorkspaceBackend> attach(const WorkspaceRef& ref) override {
    return std::make_unique<memory_backend::MemoryBackend>(ref);
  }
  bool can_attach() const override { return true; }
  // Only files: every rule needing commands or realpath SKIPs with the reason.
  Capabilities capabilities() const override {
    return memory_backend::MemoryBackend::kCapabilities;
  }
};

class MemoryFactory : public BackendFactory {
 public:
  std::string name() const override { return "memory (example)"; }
  std::unique_ptr<BackendSession> open(const RuleInfo&) override {
    return std::make_unique<MemorySession>();
  }
};

std::unique_ptr<BackendFactory> make_memory_factory() { return std::make_unique<MemoryFactory>(); }

}  // namespace

LIZARD_CONFORMANCE_SUITE(MemoryBackend, make_memory_factory);
