// One LizardSandboxBackend's sandbox: its options and client, creating or
// attaching it once on first use, knowing when it is gone or destroyed, and
// the one place where the client's api::ApiError family (answers that need
// context: 404, 409, 400 with an errno code, ...) becomes the contract's
// errors. Every request the backend sends about its sandbox goes through
// call() or raise(), so no api:: exception type reaches a caller of the
// backend.
//
// The mapping, in order (raise()):
//   409 on a sandbox route (SANDBOX_PAUSED, ...)   WorkspaceUnavailableError
//   404, and the sandbox is destroyed or gone      WorkspaceUnavailableError (gone is sticky)
//     (code SANDBOX_NOT_FOUND, or a GET of the sandbox answers 404)
//   404 about a caller's path                      filesystem_error no_such_file_or_directory
//   an errno code (EISDIR, ...) about a path       filesystem_error with that std::errc
//   404 with a `missing` message                   WorkspaceError(missing)
//   anything else (400, 402, 404, ...)             WorkspaceError (the same message)
// The client already raised the contract's own types for the rest
// (authentication, transient, not supported, cancelled; api/errors.h).
//
// Thread-safe: create/attach happens once under a mutex; the rest reads
// atomics or takes short locks, never over I/O except create/attach.
#pragma once

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lizard/api/client.h"
#include "lizard/workspace/lizard_sandbox_backend.h"

namespace lizard::workspace::internal {

inline constexpr const char* kLizardProvider = "lizard";
inline constexpr const char* kLizardWorkingDir = "/workspace";

// 32 random hex digits: run ids and staged file names.
std::string random_run_id();

// std::invalid_argument unless `ref` is lizard:<sandboxId> with an ID the
// API could have given (see valid_sandbox_id in the .cc).
void require_lizard_ref(const WorkspaceRef& ref);

// What a failed request was about, for raise().
struct RequestSubject {
  // A caller's path: a 404 and errno codes become its path errors.
  std::string_view path;
  // The message of a 404 that is neither a gone sandbox nor a path's.
  std::string_view missing;
};

// The contract's error for an API answer, without asking the server
// anything (so without the "gone" rows): what raise() does once it knows
// the sandbox is still there. `sandbox_id` empty: not a sandbox route.
[[noreturn]] void throw_contract_error(const api::ApiError& error, std::string_view sandbox_id,
                                       const RequestSubject& subject);

class SandboxSession {
 public:
  // Validates the options (std::invalid_argument); no I/O.
  explicit SandboxSession(LizardOptions options);

  const LizardOptions& options() const { return options_; }
  std::optional<WorkspaceRef> ref() const;

  // The sandbox to talk to: created (once) or attached (once) on first use.
  // WorkspaceUnavailableError once it is destroyed or gone.
  std::string sandbox();

  bool is_destroyed() const { return destroyed_.load(); }
  // Deletes the sandbox (if one was made or attached); twice is fine.
  void destroy();

  // `request(client, sandbox_id)`, its api::ApiError raised as the contract's.
  template <typename Request>
  decltype(auto) call(const std::string& sandbox_id, Request&& request,
                      const RequestSubject& subject = {}) {
    try {
      return request(client_, sandbox_id);
    } catch (const api::ApiError& error) {
      raise(error, sandbox_id, subject);
    }
  }

  // The table in the header comment.
  [[noreturn]] void raise(const api::ApiError& error, const std::string& sandbox_id,
                          const RequestSubject& subject = {});
  // WorkspaceUnavailableError: destroyed, or gone.
  [[noreturn]] void throw_unavailable() const;
  // After a failure that may mean the sandbox is gone: is it? `code` is the
  // answer's (SANDBOX_NOT_FOUND says so; ENOENT is about a file); otherwise
  // one GET of the sandbox decides. Gone is remembered.
  bool confirm_gone(const std::string& sandbox_id, std::string_view code);

  // Runs a guest helper (guest_helpers.h) as one exec, 60 s at most. It
  // sets no working directory or environment through the API (eras that
  // ignore them would differ).
  api::ExecResult run_helper(const std::string& sandbox_id, std::vector<std::string> argv);
  // The same exec, cancellable; WorkspaceCancelledError from the client is
  // left to the caller.
  api::ExecResult exec(const std::string& sandbox_id, const api::ExecRequest& request,
                       const api::CallOptions& call);

 private:
  std::string id() const;
  api::CreateSandboxRequest create_request();  // resolves the project
  std::string create();                        // with state_mutex_ held
  void attach();                               // with state_mutex_ held
  void write_tags(const std::string& sandbox_id);
  std::string gone_message() const;

  LizardOptions options_;
  api::Client client_;

  mutable std::mutex ref_mutex_;  // guards sandbox_id_ only; never held over I/O
  std::string sandbox_id_;

  std::mutex state_mutex_;  // held over create/attach so that first use happens once
  bool ready_ = false;
  bool create_outcome_unknown_ = false;
  std::atomic<bool> destroyed_{false};
  std::atomic<bool> gone_{false};
};

}  // namespace lizard::workspace::internal
