// The cells of the fault matrix (fault_matrix_test.cc): the operation
// classes, the faults the embedded mock injects for each, and what each
// cell must end in (docs/reliability.md has the table).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "lizard/mock/mock_server.h"

namespace lizard::faults {

using namespace std::chrono_literals;
using mock::FaultRule;

enum class Op { kCreate, kAttach, kExec, kExecLong, kRead, kWrite, kStat, kList, kKill };
enum class Fault {
  k500,
  k502,
  k503,
  k429,
  kClose,
  kCloseAfter,
  kTruncate,
  kDelay,
  kMalformed,
  kHtml,
  kHuge
};

constexpr Op kOps[] = {Op::kCreate, Op::kAttach, Op::kExec, Op::kExecLong, Op::kRead,
                       Op::kWrite,  Op::kStat,   Op::kList, Op::kKill};
constexpr Fault kFaults[] = {Fault::k500,       Fault::k502,        Fault::k503,      Fault::k429,
                             Fault::kClose,     Fault::kCloseAfter, Fault::kTruncate, Fault::kDelay,
                             Fault::kMalformed, Fault::kHtml,       Fault::kHuge};

inline const char* op_name(Op op) {
  switch (op) {
    case Op::kCreate:
      return "Create";
    case Op::kAttach:
      return "Attach";
    case Op::kExec:
      return "Exec";
    case Op::kExecLong:
      return "ExecLong";
    case Op::kRead:
      return "Read";
    case Op::kWrite:
      return "Write";
    case Op::kStat:
      return "Stat";
    case Op::kList:
      return "List";
    case Op::kKill:
      return "Kill";
  }
  return "?";
}

inline const char* fault_name(Fault fault) {
  switch (fault) {
    case Fault::k500:
      return "Http500";
    case Fault::k502:
      return "Http502";
    case Fault::k503:
      return "Http503";
    case Fault::k429:
      return "Http429RetryAfter";
    case Fault::kClose:
      return "CloseBeforeAnswer";
    case Fault::kCloseAfter:
      return "CloseAfterHandling";
    case Fault::kTruncate:
      return "BodyCutShort";
    case Fault::kDelay:
      return "DelayPastDeadline";
    case Fault::kMalformed:
      return "MalformedJson";
    case Fault::kHtml:
      return "HtmlErrorPage";
    case Fault::kHuge:
      return "HugeAnswer";
  }
  return "?";
}

// What the faulted operation must end in.
enum class Outcome {
  kOk,                 // returned normally
  kTransientAdmitted,  // WorkspaceTransientError, may_have_been_admitted() true
  kTransientRefused,   // WorkspaceTransientError, false (429: retry_after set)
  kError,              // a plain WorkspaceError (an answer that cannot be decoded)
};

inline const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kOk:
      return "ok";
    case Outcome::kTransientAdmitted:
      return "transient(admitted)";
    case Outcome::kTransientRefused:
      return "transient(not admitted)";
    case Outcome::kError:
      return "WorkspaceError";
  }
  return "?";
}

// A 2xx answer that is not what the route answers: the handler did not run.
inline bool is_lying_2xx(Fault f) { return f == Fault::kMalformed || f == Fault::kHuge; }
// The mock ran the handler (its side effects happened) before failing.
inline bool handler_ran(Fault f) {
  return f == Fault::kCloseAfter || f == Fault::kTruncate || f == Fault::kDelay;
}

// The documented expectation of each cell (docs/reliability.md): the
// outcomes accepted, the usual one first.
inline std::vector<Outcome> expected_outcomes(Op op, Fault f) {
  using O = Outcome;
  const bool exec = op == Op::kExec || op == Op::kExecLong;
  // A 429 refuses the request unread; but the re-attach of a started run
  // was admitted the first time, so it must not say "not admitted".
  if (f == Fault::k429) return {op == Op::kExecLong ? O::kTransientAdmitted : O::kTransientRefused};
  // A run is re-attached by its run id after any admitted failure, so the
  // caller sees the result; an answer that cannot be decoded is an error.
  if (exec) return {is_lying_2xx(f) ? O::kError : O::kOk};
  if (f == Fault::kHuge) {
    // Routes with a request deadline (400 ms here) give up while 300 MiB
    // arrive; a raw read (capped at 1 GiB) may finish first. Every other
    // answer, ignored 2xx bodies included, is buffered up to 64 MiB only:
    // past it the call is a plain WorkspaceError (D3).
    if (op == Op::kRead) return {O::kTransientAdmitted, O::kOk};
    return {O::kTransientAdmitted, O::kError};
  }
  if (f == Fault::kMalformed) {
    // The raw read returns the body it got; write and kill decode nothing.
    if (op == Op::kRead || op == Op::kWrite || op == Op::kKill) return {O::kOk};
    return {O::kError};
  }
  if ((f == Fault::kClose || f == Fault::kCloseAfter) && op != Op::kCreate && op != Op::kAttach) {
    // libcurl re-sends a request whose reused keep-alive connection died
    // before an answer (these routes are idempotent; create and remove are
    // sent on fresh connections); a fresh connection fails instead.
    return {O::kOk, O::kTransientAdmitted};
  }
  return {O::kTransientAdmitted};
}

inline std::string outcome_list(const std::vector<Outcome>& outcomes) {
  std::string out;
  for (const Outcome o : outcomes)
    out += (out.empty() ? "" : " or ") + std::string(outcome_name(o));
  return out;
}

constexpr std::size_t kHugeBytes = 300u * 1024 * 1024;
constexpr auto kDelay = 1500ms;

// The route an operation's faulted request takes.
inline void set_route(Op op, FaultRule& r) {
  switch (op) {
    case Op::kCreate:
      r.method = "POST";
      r.path_pattern = "/api/sandboxes";
      break;
    case Op::kAttach:
      r.method = "GET";
      r.path_pattern = "/api/sandboxes/*";
      break;
    case Op::kExec:
    case Op::kExecLong:
      r.method = "POST";
      r.path_pattern = "/api/sandboxes/*/exec";
      break;
    case Op::kRead:
      r.method = "GET";
      r.path_pattern = "/api/sandboxes/*/files";
      break;
    case Op::kWrite:
      r.method = "POST";
      r.path_pattern = "/api/sandboxes/*/files";
      break;
    case Op::kStat:
      r.method = "GET";
      r.path_pattern = "/api/sandboxes/*/files/stat";
      break;
    case Op::kList:
      r.method = "GET";
      r.path_pattern = "/api/sandboxes/*/files/list";
      break;
    case Op::kKill:
      r.method = "DELETE";
      r.path_pattern = "/api/sandboxes/*";
      break;
  }
}

// What the mock does to that request.
inline void set_action(Fault f, FaultRule& r) {
  switch (f) {
    case Fault::k500:
    case Fault::k502:
    case Fault::k503:
      r.action = FaultRule::Action::kRespond;
      r.status = f == Fault::k500 ? 500 : f == Fault::k502 ? 502 : 503;
      r.body = R"({"error":"injected server failure","code":"INTERNAL"})";
      break;
    case Fault::k429:
      r.action = FaultRule::Action::kRespond;
      r.status = 429;
      r.body = R"({"error":"Rate limit exceeded","code":"RATE_LIMITED","retryAfterS":7})";
      break;
    case Fault::kClose:
      r.action = FaultRule::Action::kClose;
      break;
    case Fault::kCloseAfter:
      r.action = FaultRule::Action::kCloseAfterHandling;
      break;
    case Fault::kTruncate:
      r.action = FaultRule::Action::kTruncate;
      r.truncate_at = 1;
      break;
    case Fault::kDelay:
      r.action = FaultRule::Action::kDelay;
      r.delay = kDelay;
      break;
    case Fault::kMalformed:
      r.action = FaultRule::Action::kRespond;
      r.status = 200;
      r.body = R"({"sandboxId":"sbx_cut", "stdout": "x)";
      break;
    case Fault::kHtml:
      r.action = FaultRule::Action::kRespond;
      r.status = 502;
      r.content_type = "text/html";
      r.body =
          "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
          "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
          "</body>\r\n</html>\r\n";
      break;
    case Fault::kHuge:
      r.action = FaultRule::Action::kRespond;
      r.status = 200;
      r.body.assign(kHugeBytes, ' ');
      r.body += "{";
      break;
  }
}

inline FaultRule rule_for(Op op, Fault f) {
  FaultRule r;
  r.times = 1;
  set_route(op, r);
  set_action(f, r);
  return r;
}

}  // namespace lizard::faults
