// The cells of the fault matrix (fault_matrix_test.cc): the operation
// classes, the faults the embedded mock injects for each, and what each
// cell must end in (docs/reliability.md has the table).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "lizard/mock/mock_server.h"
#include "lizard/testing/faults.h"

namespace lizard::faults {

using namespace std::chrono_literals;
namespace fault = lizard::testing::fault;

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
    // Routes with a request deadline (400 ms here) give up while 128 MiB
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

// Twice the 64 MiB that every answer but a raw read is buffered up to (D3):
// over that cap whichever way the cell ends. (It was 300 MiB: the same
// outcomes for 2.3 times the CPU and memory, 630 MB of RSS a cell.)
constexpr std::size_t kHugeBytes = 128u * 1024 * 1024;
constexpr auto kDelay = 1500ms;

// The route an operation's faulted request takes: method and path pattern.
struct Route {
  const char* method;
  const char* path;
};

inline Route route_of(Op op) {
  switch (op) {
    case Op::kCreate:
      return {"POST", "/api/sandboxes"};
    case Op::kAttach:
      return {"GET", "/api/sandboxes/*"};
    case Op::kExec:
    case Op::kExecLong:
      return {"POST", "/api/sandboxes/*/exec"};
    case Op::kRead:
      return {"GET", "/api/sandboxes/*/files"};
    case Op::kWrite:
      return {"POST", "/api/sandboxes/*/files"};
    case Op::kStat:
      return {"GET", "/api/sandboxes/*/files/stat"};
    case Op::kList:
      return {"GET", "/api/sandboxes/*/files/list"};
    case Op::kKill:
      return {"DELETE", "/api/sandboxes/*"};
  }
  return {"?", "?"};
}

// What the mock does to that request.
inline fault::Builder fault_on(Fault f, const Route& route) {
  switch (f) {
    case Fault::k500:
    case Fault::k502:
    case Fault::k503:
      return fault::respond(route.method, route.path,
                            f == Fault::k500   ? 500
                            : f == Fault::k502 ? 502
                                               : 503)
          .body(R"({"error":"injected server failure","code":"INTERNAL"})");
    case Fault::k429:
      return fault::respond(route.method, route.path, 429)
          .body(R"({"error":"Rate limit exceeded","code":"RATE_LIMITED","retryAfterS":7})");
    case Fault::kClose:
      return fault::close(route.method, route.path);
    case Fault::kCloseAfter:
      return fault::close_after_handling(route.method, route.path);
    case Fault::kTruncate:
      return fault::truncate(route.method, route.path, 1);
    case Fault::kDelay:
      return fault::delay(route.method, route.path, kDelay);
    case Fault::kMalformed:
      return fault::respond(route.method, route.path, 200)
          .body(R"({"sandboxId":"sbx_cut", "stdout": "x)");
    case Fault::kHtml:
      return fault::respond(route.method, route.path, 502)
          .body(
              "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
              "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
              "</body>\r\n</html>\r\n",
              "text/html");
    case Fault::kHuge: {
      // Built in place: a builder chain would copy the 128 MiB body.
      fault::Builder huge = fault::respond(route.method, route.path, 200);
      huge.body(std::string(kHugeBytes, ' ') + "{");
      return huge;
    }
  }
  return fault::respond(route.method, route.path, 500);
}

// The cell's fault: once, on the operation's route.
inline mock::FaultRule rule_for(Op op, Fault f) {
  fault::Builder rule = fault_on(f, route_of(op));
  rule.times(1);
  return rule;  // an rvalue here: the body is moved out (kHuge's is 128 MiB)
}

}  // namespace lizard::faults
