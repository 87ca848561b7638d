#include "lizard/conformance/local_factory.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "lizard/workspace/local_workspace_backend.h"

namespace lizard::conformance {

namespace {

using workspace::LocalOptions;
using workspace::LocalWorkspaceBackend;

class LocalSession : public BackendSession {
 public:
  LocalSession(std::string base, std::atomic<unsigned>& counter)
      : base_(std::move(base)), counter_(counter) {}

  std::unique_ptr<WorkspaceBackend> make() override {
    LocalOptions options;
    options.root = base_ + "/env-" + std::to_string(counter_.fetch_add(1));
    return std::make_unique<LocalWorkspaceBackend>(options);
  }
  std::unique_ptr<WorkspaceBackend> attach(const WorkspaceRef& ref) override {
    LocalOptions options;
    options.ref = ref;
    return std::make_unique<LocalWorkspaceBackend>(options);
  }
  bool can_attach() const override { return true; }
  Capabilities capabilities() const override {
    return {Capability::kCommands, Capability::kFilesystem, Capability::kRealpath};
  }
  Deviations deviations() const override {
    Deviations d;
    d.commands_run_as_root = ::geteuid() == 0;
    return d;
  }

 private:
  std::string base_;
  std::atomic<unsigned>& counter_;
};

class LocalFactory : public BackendFactory {
 public:
  explicit LocalFactory(LocalFactoryOptions options) {
    if (!options.base_dir.empty()) {
      base_ = options.base_dir;
      std::filesystem::create_directories(base_);
    } else {
      const char* tmp = std::getenv("TMPDIR");
      std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/lizard-conformance-XXXXXX";
      if (::mkdtemp(pattern.data()) == nullptr) {
        throw std::system_error(errno, std::generic_category(), "mkdtemp");
      }
      base_ = pattern;
      owned_ = true;
    }
    // Environments are named by their canonical path.
    base_ = std::filesystem::canonical(base_).string();
  }
  ~LocalFactory() override {
    if (!owned_) return;
    std::error_code ignored;
    // Tests chmod files to 000; make everything removable first.
    for (auto it = std::filesystem::recursive_directory_iterator(
             base_, std::filesystem::directory_options::skip_permission_denied, ignored);
         !ignored && it != std::filesystem::recursive_directory_iterator(); it.increment(ignored)) {
      std::filesystem::permissions(
          it->path(), std::filesystem::perms::owner_all,
          std::filesystem::perm_options::add | std::filesystem::perm_options::nofollow, ignored);
    }
    std::filesystem::remove_all(base_, ignored);
  }
  std::string name() const override { return "local"; }
  std::unique_ptr<BackendSession> open(const RuleInfo&) override {
    // One directory per session: the nearest ancestor of an environment
    // belongs to its rule alone, so a backend that wrongly removes an
    // ancestor (fs.remove-refuses-working-dir) hurts no other rule.
    const std::string dir = base_ + "/s-" + std::to_string(counter_.fetch_add(1));
    std::filesystem::create_directories(dir);
    return std::make_unique<LocalSession>(dir, counter_);
  }

 private:
  std::string base_;
  bool owned_ = false;
  std::atomic<unsigned> counter_{0};
};

}  // namespace

std::unique_ptr<BackendFactory> make_local_factory(LocalFactoryOptions options) {
  return std::make_unique<LocalFactory>(std::move(options));
}

}  // namespace lizard::conformance
