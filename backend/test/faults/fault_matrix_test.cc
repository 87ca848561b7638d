// The fault matrix: every operation class of LizardSandboxBackend against
// every fault the embedded mock can inject, one registered test per cell
// (FaultMatrix.<Op><Fault>). Each cell writes down what must happen
// (expected_outcome) and checks, besides the typed error:
//   - no hang (a generous bound), no crash;
//   - no second sandbox, no command run twice (a marker line per run);
//   - the backend still serves the next operation (or refuses with
//     WorkspaceUnavailableError where that is the design: an admitted create);
//   - file descriptors and threads back to the level before the fault.
// Cells that fail because of a backend defect are registered DISABLED_ with
// the defect named (kKnownDefects); docs/reliability.md has the table.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fault_support.h"
#include "lizard/mock/mock_server.h"
#include "lizard/workspace/errors.h"
#include "lizard/workspace/lizard_sandbox_backend.h"

namespace lizard::faults {
namespace {

using mock::FaultRule;
using mock::MockOptions;
using mock::MockServer;
using workspace::LizardOptions;
using workspace::LizardSandboxBackend;
using workspace::Shell;

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

const char* op_name(Op op) {
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

const char* fault_name(Fault fault) {
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

const char* outcome_name(Outcome o) {
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
bool is_lying_2xx(Fault f) { return f == Fault::kMalformed || f == Fault::kHuge; }
// The mock ran the handler (its side effects happened) before failing.
bool handler_ran(Fault f) {
  return f == Fault::kCloseAfter || f == Fault::kTruncate || f == Fault::kDelay;
}

// The documented expectation of each cell (docs/reliability.md): the
// outcomes accepted, the usual one first.
std::vector<Outcome> expected_outcomes(Op op, Fault f) {
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

std::string outcome_list(const std::vector<Outcome>& outcomes) {
  std::string out;
  for (const Outcome o : outcomes)
    out += (out.empty() ? "" : " or ") + std::string(outcome_name(o));
  return out;
}

// Cells that fail because of a defect in backend/src (registered DISABLED_;
// the integrator routes the fix). Keyed by the cell name. Empty since D1
// (CreateMalformedJson) and D2 (ExecLongHttp429RetryAfter) were fixed.
struct KnownDefect {
  const char* cell;
  const char* defect;
};
constexpr std::array<KnownDefect, 0> kKnownDefects{};

const char* known_defect(const std::string& cell) {
  for (const auto& d : kKnownDefects) {
    if (cell == d.cell) return d.defect;
  }
  return nullptr;
}

constexpr std::size_t kHugeBytes = 300u * 1024 * 1024;
constexpr auto kRequestTimeout = 400ms;
constexpr auto kDelay = 1500ms;
constexpr auto kNoHang = 20s;

FaultRule rule_for(Op op, Fault f) {
  FaultRule r;
  r.times = 1;
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
  return r;
}

// Lines of the run marker file of a sandbox, read on the host.
std::size_t marker_lines(const MockServer& server, const std::string& sandbox_id) {
  const std::string dir = server.workspace_dir(sandbox_id);
  if (dir.empty()) return 0;
  std::ifstream in(dir + "/runs.log");
  std::size_t n = 0;
  std::string line;
  while (std::getline(in, line)) ++n;
  return n;
}

const std::string kRunScript = "echo x >> /workspace/runs.log; echo ok";
const std::string kLongScript = "echo x >> /workspace/runs.log; sleep 1; echo ok";

class Cell : public ::testing::Test {
 public:
  Cell(Op op, Fault fault) : op_(op), fault_(fault) {}

  void TestBody() override {
    MockOptions mo;
    // The long-command path: the server's per-request limit cuts the first
    // exec, the client re-sends it (re-attach), and the fault hits that.
    if (op_ == Op::kExecLong) mo.exec_limit = 400ms;
    server_ = std::make_unique<MockServer>(mo);
    const std::string key = server_->api_key();

    // One answered request first: the mock starts its worker pool lazily.
    workspace::LizardSandbox(options()).destroy({"lizard", "sbx_warm_up"});
    std::unique_ptr<LizardSandboxBackend> backend =
        std::make_unique<LizardSandboxBackend>(options());
    std::string sandbox_id;
    if (op_ == Op::kAttach) {
      LizardSandboxBackend setup(options());
      ASSERT_EQ(setup.run(Shell{"true"}).exit_code, 0);
      sandbox_id = setup.ref()->id;
      auto o = options();
      o.ref = setup.ref();
      backend = std::make_unique<LizardSandboxBackend>(o);
    } else if (op_ != Op::kCreate) {
      backend->write_bytes("/workspace/data.txt", "hello");
      sandbox_id = backend->ref()->id;
    }
    // Settle the baseline once the warm-up connections are pooled.
    const std::size_t fds_before = open_fds();
    const long threads_before = threads();
    server_->clear_journal();

    if (op_ == Op::kExecLong) {
      // Rule 1 lets the first exec through (it is cut by the limit); rule 2 is the fault.
      FaultRule pass;
      pass.method = "POST";
      pass.path_pattern = "/api/sandboxes/*/exec";
      pass.action = FaultRule::Action::kDelay;
      pass.delay = 0ms;
      pass.times = 1;
      server_->add_fault(pass);
    }
    server_->add_fault(rule_for(op_, fault_));

    // --- the faulted operation -------------------------------------------------
    std::optional<Outcome> got;
    std::string message;
    std::optional<std::chrono::seconds> retry_after;
    std::string read_back;
    const auto start = std::chrono::steady_clock::now();
    try {
      perform(*backend, read_back);
      got = Outcome::kOk;
    } catch (const workspace::WorkspaceTransientError& e) {
      got = e.may_have_been_admitted() ? Outcome::kTransientAdmitted : Outcome::kTransientRefused;
      message = e.what();
      retry_after = e.retry_after();
    } catch (const workspace::WorkspaceUnavailableError& e) {
      message = std::string("unavailable: ") + e.what();
    } catch (const workspace::WorkspaceError& e) {
      got = Outcome::kError;
      message = e.what();
    } catch (const std::exception& e) {
      message = std::string("untyped: ") + e.what();
    }
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_LT(took, kNoHang) << "the operation hung";

    const std::vector<Outcome> want = expected_outcomes(op_, fault_);
    ASSERT_TRUE(got.has_value()) << "expected " << outcome_list(want) << ", got " << message;
    EXPECT_NE(std::find(want.begin(), want.end(), *got), want.end())
        << "expected " << outcome_list(want) << ", got " << outcome_name(*got) << ": " << message;
    got_ = *got;
    if (got != Outcome::kOk) {
      EXPECT_FALSE(message.empty());
      EXPECT_EQ(message.find(key), std::string::npos) << "the key leaked into: " << message;
      EXPECT_LT(message.size(), 4096u) << "an error message carries a whole answer";
    }
    if (fault_ == Fault::k429) {
      ASSERT_TRUE(retry_after.has_value()) << message;
      EXPECT_EQ(retry_after->count(), 7);
    }
    if (got == Outcome::kOk && (op_ == Op::kExec || op_ == Op::kExecLong)) {
      EXPECT_EQ(read_back, "ok\n");
    }
    if (got == Outcome::kOk && op_ == Op::kRead) {
      EXPECT_EQ(read_back, is_lying_2xx(fault_) ? rule_for(op_, fault_).body : "hello");
    }

    // The mock may still be handling a delayed request: let it finish so that
    // what follows sees its side effects.
    if (fault_ == Fault::kDelay) {
      ASSERT_TRUE(eventually([&] { return count_route() >= (op_ == Op::kExecLong ? 2u : 1u); }));
    }
    server_->clear_faults();

    // --- the next operation ------------------------------------------------------
    follow_up(*backend, sandbox_id);

    // --- no leak -------------------------------------------------------------------
    // Sandboxes hold fds in the mock; only the client's must be back.
    backend.reset();
    server_->reset();
    EXPECT_TRUE(eventually([&] { return open_fds() <= fds_before + 2; }, 5s))
        << "fds before " << fds_before << ", after " << open_fds();
    EXPECT_TRUE(eventually([&] { return threads() <= threads_before + 1; }, 5s))
        << "threads before " << threads_before << ", after " << threads();
  }

 private:
  LizardOptions options() const {
    LizardOptions o;
    o.api_key = server_->api_key();
    o.project = server_->project_id();
    o.api_url = server_->url();
    o.request_timeout = kRequestTimeout;
    return o;
  }

  void perform(LizardSandboxBackend& backend, std::string& read_back) {
    switch (op_) {
      case Op::kCreate:
      case Op::kAttach:
      case Op::kExec:
        read_back = backend.run(Shell{kRunScript}).out;
        break;
      case Op::kExecLong:
        read_back = backend.run(Shell{kLongScript}).out;
        break;
      case Op::kRead:
        read_back = backend.read_bytes("/workspace/data.txt");
        break;
      case Op::kWrite:
        backend.write_bytes("/workspace/out.txt", "payload");
        break;
      case Op::kStat:
        EXPECT_EQ(backend.stat("/workspace/data.txt").size, 5u);
        break;
      case Op::kList:
        EXPECT_FALSE(backend.list_dir("/workspace").empty());
        break;
      case Op::kKill:
        backend.destroy();
        break;
    }
  }

  void follow_up(LizardSandboxBackend& backend, std::string sandbox_id) {
    const bool create_admitted = op_ == Op::kCreate && got_ != Outcome::kTransientRefused;
    if (create_admitted) {
      // The create may have happened: the backend must refuse, never create again.
      EXPECT_THROW(backend.run(Shell{"true"}), workspace::WorkspaceUnavailableError);
      EXPECT_TRUE(eventually([&] { return count_creates() >= 1; }, 5s));
      EXPECT_EQ(count_creates(), 1u) << "a create was repeated";
      const std::size_t live = handler_ran(fault_) ? 1u : 0u;
      EXPECT_TRUE(eventually([&] { return server_->live_sandboxes() == live; }, 5s))
          << "live sandboxes " << server_->live_sandboxes() << ", expected " << live;
      return;
    }
    if (op_ == Op::kKill) {
      EXPECT_NO_THROW(backend.destroy());
      if (is_lying_2xx(fault_) && got_ == Outcome::kOk) {
        // The server said it deleted it and did not: the backend believed it.
        EXPECT_EQ(server_->live_sandboxes(), 1u);
      } else {
        EXPECT_TRUE(eventually([&] { return server_->live_sandboxes() == 0; }, 5s));
      }
      EXPECT_THROW(backend.run(Shell{"true"}), workspace::WorkspaceUnavailableError);
      return;
    }
    const auto next = backend.run(Shell{kRunScript});
    EXPECT_EQ(next.exit_code, 0);
    EXPECT_EQ(next.out, "ok\n");
    if (sandbox_id.empty()) sandbox_id = backend.ref()->id;
    EXPECT_EQ(server_->live_sandboxes(), 1u) << "a second sandbox exists";
    EXPECT_LE(count_creates(), op_ == Op::kCreate ? 2u : 0u);

    // How many times the marker command ran: the faulted run (when it ran at
    // all, exactly once) plus the follow-up.
    std::size_t faulted_runs = 0;
    if (op_ == Op::kExec) faulted_runs = (fault_ == Fault::k429 || is_lying_2xx(fault_)) ? 0 : 1;
    // The long run started with the first exec, before the fault.
    if (op_ == Op::kExecLong) faulted_runs = 1;
    if (op_ == Op::kCreate || op_ == Op::kAttach || op_ == Op::kExec || op_ == Op::kExecLong) {
      EXPECT_TRUE(
          eventually([&] { return marker_lines(*server_, sandbox_id) == faulted_runs + 1; }, 5s))
          << "the marker command ran " << marker_lines(*server_, sandbox_id) << " times; expected "
          << faulted_runs + 1;
    }
    if (op_ == Op::kWrite) {
      backend.write_bytes("/workspace/out.txt", "second");
      EXPECT_EQ(backend.read_bytes("/workspace/out.txt"), "second");
    }
    if (op_ == Op::kRead) {
      EXPECT_EQ(backend.read_bytes("/workspace/data.txt"), "hello");
    }
    if (op_ == Op::kStat) {
      EXPECT_EQ(backend.stat("/workspace/data.txt").size, 5u);
    }
    if (op_ == Op::kList) {
      EXPECT_FALSE(backend.list_dir("/workspace").empty());
    }
  }

  // Answered requests of the faulted operation's route.
  std::size_t count_route() const {
    const auto ends = [](const std::string& s, std::string_view tail) {
      return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
    };
    std::size_t n = 0;
    for (const auto& e : server_->requests()) {
      bool match = false;
      switch (op_) {
        case Op::kCreate:
          match = e.method == "POST" && e.path == "/api/sandboxes";
          break;
        case Op::kAttach:
          match = e.method == "GET" &&
                  e.path.find('/', std::string("/api/sandboxes/").size()) == std::string::npos;
          break;
        case Op::kExec:
        case Op::kExecLong:
          match = e.method == "POST" && ends(e.path, "/exec");
          break;
        case Op::kRead:
          match = e.method == "GET" && ends(e.path, "/files");
          break;
        case Op::kWrite:
          match = e.method == "POST" && ends(e.path, "/files");
          break;
        case Op::kStat:
          match = ends(e.path, "/files/stat");
          break;
        case Op::kList:
          match = ends(e.path, "/files/list");
          break;
        case Op::kKill:
          match = e.method == "DELETE";
          break;
      }
      if (match) ++n;
    }
    return n;
  }

  std::size_t count_creates() const {
    std::size_t n = 0;
    for (const auto& e : server_->requests()) {
      if (e.method == "POST" && e.path == "/api/sandboxes") ++n;
    }
    return n;
  }

  Op op_;
  Fault fault_;
  Outcome got_ = Outcome::kOk;
  std::unique_ptr<MockServer> server_;
};

// Registers one test per cell before main runs.
const bool kRegistered = [] {
  for (const Op op : kOps) {
    for (const Fault fault : kFaults) {
      const std::string cell = std::string(op_name(op)) + fault_name(fault);
      const char* defect = known_defect(cell);
      const std::string name = defect != nullptr ? "DISABLED_" + cell : cell;
      ::testing::RegisterTest("FaultMatrix", name.c_str(), nullptr, defect, __FILE__, __LINE__,
                              [op, fault]() -> ::testing::Test* { return new Cell(op, fault); });
    }
  }
  return true;
}();

}  // namespace
}  // namespace lizard::faults
