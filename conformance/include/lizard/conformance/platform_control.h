// The lizard profile's view of a platform, for the `lizard.*` rules: the
// HTTP traffic (a journal), faults, the clock, and backends built with
// changed settings. A session offers it through BackendSession::platform().
// Not every platform offers all of it: facilities() says which parts work
// (the embedded mock: all; a live session against the real API: backends
// with overrides and the journal of its own backends' requests, without
// bodies; see PlatformFacility). A rule that needs a part the view lacks
// SKIPs with the reason. Generic backends and their factories never need
// this header.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lizard/workspace/backend.h"

namespace lizard::conformance {

using workspace::WorkspaceBackend;
using workspace::WorkspaceRef;

// One HTTP request as the platform saw it (the auth headers are never kept).
struct HttpRequestRecord {
  std::string method;
  std::string path;   // without the query string
  std::string query;  // raw, without '?'
  int status = 0;
  std::string body;
};

// A fault the platform injects for the requests whose method and path match
// (the mock's glob: '*' within one segment, '**' across segments).
struct FaultSpec {
  enum class Kind {
    kRespond,             // answer `status` with `body`; the request is not handled
    kClose,               // drop the connection without answering; not handled
    kCloseAfterHandling,  // handle the request (side effects happen), then drop the connection
    kDelay,               // wait `delay`, then handle normally
  };
  std::string method = "*";
  std::string path_pattern;
  Kind kind = Kind::kRespond;
  int status = 500;
  std::string body = R"({"error":"injected fault"})";
  std::chrono::milliseconds delay{0};
  int times = -1;  // the next `times` matches; -1: every match
};

// Settings the profile rules change on a backend; an empty field keeps the
// session's default.
struct BackendOverrides {
  std::optional<std::string> size;                    // e.g. "small"
  std::optional<std::chrono::milliseconds> lifetime;  // sandbox lifetime
  std::map<std::string, std::string> env;             // the backend-wide env
  std::optional<std::string> api_key;                 // e.g. a key the platform rejects
  std::optional<WorkspaceRef> ref;                    // attach instead of create
};

// The parts of a platform view (bits of PlatformControl::facilities()).
enum PlatformFacility : unsigned {
  // make_with(): backends with changed settings (attach, another key, a
  // size, a lifetime).
  kPlatformBackends = 1u << 0,
  // requests() and clear_requests(): every request the session's backends
  // sent, with method, path and status.
  kPlatformJournal = 1u << 1,
  // requests() also carry each request's body and query string, as the
  // platform received them (the mock's journal; a client cannot see them).
  kPlatformRequestContent = 1u << 2,
  // add_fault() and clear_faults().
  kPlatformFaults = 1u << 3,
  // expire_all(): the platform's clock moves at will.
  kPlatformClock = 1u << 4,
  // exec_limit() can be shortened for a rule (RuleInfo::wants_short_exec_limit).
  kPlatformShortExecLimit = 1u << 5,
};
inline constexpr unsigned kPlatformEverything = (1u << 6) - 1;

// "fault injection, the clock": the facilities in `bits`, for skip reasons.
std::string describe_facilities(unsigned bits);

// The view of a platform that the `lizard.*` profile rules need: the HTTP
// traffic, the clock, faults and backend settings. The embedded mock offers
// all of it; a live session offers what facilities() says, and the other
// members throw std::logic_error. Thread-safe.
class PlatformControl {
 public:
  virtual ~PlatformControl() = default;

  // The PlatformFacility bits this view offers. The default, everything,
  // keeps views written before facilities existed (the mock's) whole.
  virtual unsigned facilities() const { return kPlatformEverything; }
  // True when every bit of `bits` is offered.
  bool offers(unsigned bits) const { return (facilities() & bits) == bits; }

  // Every request the session's platform received so far, oldest first.
  virtual std::vector<HttpRequestRecord> requests() const = 0;
  virtual void clear_requests() = 0;
  // Moves the platform's clock past every sandbox's lifetime (they expire).
  virtual void expire_all() = 0;
  virtual void add_fault(const FaultSpec& fault) = 0;
  virtual void clear_faults() = 0;
  // The platform's per-request command execution limit (the API's documented
  // 600 s on a real platform).
  virtual std::chrono::milliseconds exec_limit() const = 0;
  // A backend built with the session's defaults changed by `overrides`.
  // Throws what the backend's constructor throws (std::invalid_argument for
  // an invalid size, say).
  virtual std::unique_ptr<WorkspaceBackend> make_with(const BackendOverrides& overrides) = 0;
  // Log lines the backends of this session wrote through their log sink.
  virtual std::vector<std::string> log_lines() const { return {}; }
  // Whether a secret of the session (the API key) appeared in that log in a
  // part log_lines() no longer holds (an adapter's stderr is kept bounded:
  // a line cut at 64 KiB, the oldest lines past 8 MiB dropped).
  virtual bool log_carried_a_secret() const { return false; }
};

}  // namespace lizard::conformance
