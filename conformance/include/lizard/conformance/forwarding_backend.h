// Building blocks for backends that change one behaviour of another: the
// deliberately broken "mutant" backends that prove the suite, and adapters.
//
//   class DropsStderr : public ForwardingBackend {
//    public:
//     using ForwardingBackend::ForwardingBackend;
//     CommandResult run(const Command& c, const RunOptions& o) override {
//       auto r = ForwardingBackend::run(c, o);
//       r.err.clear();
//       return r;
//     }
//   };
//   auto factory = decorate_factory(make_local_factory(), "drops-stderr",
//       [](std::unique_ptr<WorkspaceBackend> b) { return
//       std::make_unique<DropsStderr>(std::move(b)); });
//
// Thread safety: as thread-safe as the wrapped backend.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lizard/conformance/backend_factory.h"

namespace lizard::conformance {

// Forwards every call to the wrapped backend (to current(), which is the
// wrapped backend unless a subclass swaps it). Offers a capability exactly
// when the wrapped backend does. The wrapped backend is held shared, so a
// decorator whose work outlives a call (an abandoned command) can keep it.
class ForwardingBackend : public WorkspaceBackend,
                          public workspace::SupportsCommands,
                          public workspace::SupportsFilesystem,
                          public workspace::SupportsRealpath {
 public:
  // Precondition: inner != nullptr (std::invalid_argument otherwise). A
  // std::unique_ptr converts.
  explicit ForwardingBackend(std::shared_ptr<WorkspaceBackend> inner);

  WorkspaceBackend& inner() { return *inner_; }

  Capabilities capabilities() const override { return inner_->capabilities(); }
  workspace::SupportsCommands* commands() override;
  workspace::SupportsFilesystem* filesystem() override;
  workspace::SupportsRealpath* realpath_support() override;
  std::optional<WorkspaceRef> ref() const override { return current()->ref(); }
  std::string working_dir() const override { return current()->working_dir(); }
  void destroy() override { current()->destroy(); }

  workspace::CommandResult run(const workspace::Command& command,
                               const workspace::RunOptions& options = {}) override;
  std::string read_bytes(const std::string& path) override;
  void write_bytes(const std::string& path, const std::string& data) override;
  workspace::FileEntry stat(const std::string& path) override;
  std::vector<workspace::FileEntry> list_dir(const std::string& path) override;
  void make_dir(const std::string& path) override;
  void remove(const std::string& path) override;
  bool exists(const std::string& path) override;
  std::string realpath(const std::string& path) override;

 protected:
  // The backend calls go to: the wrapped one unless a subclass says otherwise.
  virtual std::shared_ptr<WorkspaceBackend> current() const { return inner_; }
  const std::shared_ptr<WorkspaceBackend>& original() const { return inner_; }

 private:
  std::shared_ptr<WorkspaceBackend> inner_;
};

using BackendDecorator =
    std::function<std::unique_ptr<WorkspaceBackend>(std::unique_ptr<WorkspaceBackend>)>;

// A factory whose sessions are `inner`'s sessions with every backend they
// make or attach passed through `decorate`. Capabilities, deviations,
// secrets and the platform view are the inner session's; `mutate_session`,
// when given, may change the session's declared values (e.g. claim a
// capability the decorated backend lacks).
struct SessionTraits {
  Capabilities capabilities;
  Deviations deviations;
};
std::unique_ptr<BackendFactory> decorate_factory(
    std::shared_ptr<BackendFactory> inner, std::string name, BackendDecorator decorate,
    std::function<void(SessionTraits&)> mutate_session = {});

}  // namespace lizard::conformance
