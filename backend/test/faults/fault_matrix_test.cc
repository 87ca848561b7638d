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

#include "fault_matrix_cells.h"
#include "fault_support.h"
#include "lizard/mock/mock_server.h"
#include "lizard/testing/mock_fixture.h"
#include "lizard/workspace/errors.h"
#include "lizard/workspace/lizard_sandbox_backend.h"

namespace lizard::faults {
namespace {

using lizard::testing::is_create;
using mock::MockOptions;
using mock::MockServer;
using workspace::LizardOptions;
using workspace::LizardSandboxBackend;
using workspace::Shell;

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

constexpr auto kRequestTimeout = 400ms;
// An operation that takes longer has hung. A huge answer gets more: its
// 128 MiB take seconds of CPU on a slow host, and with the five huge cells
// and the soak at once, the two of a run took 31 s (before and after
// 266751c alike).
constexpr auto kNoHang = 20s;
constexpr auto kNoHangHuge = 60s;

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

// The long-command path: the server's per-request limit cuts the first
// exec, the client re-sends it (re-attach), and the fault hits that.
MockOptions mock_options_for(Op op) {
  MockOptions mo;
  if (op == Op::kExecLong) mo.exec_limit = 400ms;
  return mo;
}

class Cell : public lizard::testing::MockFixture {
 public:
  Cell(Op op, Fault fault) : MockFixture(mock_options_for(op)), op_(op), fault_(fault) {}

  void TestBody() override {
    set_up();
    if (HasFatalFailure()) return;
    // Settle the baseline once the warm-up connections are pooled.
    const std::size_t fds_before = open_fds();
    const long threads_before = threads();
    server_.clear_journal();
    add_faults();

    const Attempt attempt = attempt_faulted();
    check(attempt);
    if (HasFatalFailure()) return;
    // The mock may still be handling a delayed request: let it finish so that
    // what follows sees its side effects.
    if (fault_ == Fault::kDelay) {
      ASSERT_TRUE(Eventually([&] { return count_route() >= (op_ == Op::kExecLong ? 2u : 1u); }));
    }
    server_.clear_faults();

    follow_up(*backend_, sandbox_id_);

    // No leak: sandboxes hold fds in the mock; only the client's must be back.
    backend_.reset();
    server_.reset();
    EXPECT_TRUE(Eventually([&] { return open_fds() <= fds_before + 2; }, 60s))
        << "fds before " << fds_before << ", after " << open_fds();
    EXPECT_TRUE(Eventually([&] { return threads() <= threads_before + 1; }, 60s))
        << "threads before " << threads_before << ", after " << threads();
  }

 private:
  // What the faulted operation did.
  struct Attempt {
    std::optional<Outcome> got;
    std::string message;
    std::optional<std::chrono::seconds> retry_after;
    std::string read_back;
  };

  // A backend ready for the operation (for an attach, one built from the
  // ref of a sandbox made first).
  void set_up() {
    // One answered request first: the mock starts its worker pool lazily.
    workspace::LizardSandbox(options()).destroy({"lizard", "sbx_warm_up"});
    backend_ = std::make_unique<LizardSandboxBackend>(options());
    if (op_ == Op::kAttach) {
      LizardSandboxBackend setup(options());
      ASSERT_EQ(setup.run(Shell{"true"}).exit_code, 0);
      sandbox_id_ = setup.ref()->id;
      auto o = options();
      o.ref = setup.ref();
      backend_ = std::make_unique<LizardSandboxBackend>(o);
    } else if (op_ != Op::kCreate) {
      backend_->write_bytes("/workspace/data.txt", "hello");
      sandbox_id_ = backend_->ref()->id;
    }
  }

  void add_faults() {
    if (op_ == Op::kExecLong) {
      // Rule 1 lets the first exec through (it is cut by the limit); rule 2 is the fault.
      server_.add_fault(fault::delay("POST", "/api/sandboxes/*/exec", 0ms).times(1));
    }
    server_.add_fault(rule_for(op_, fault_));
  }

  Attempt attempt_faulted() {
    Attempt attempt;
    const auto start = std::chrono::steady_clock::now();
    try {
      perform(*backend_, attempt.read_back);
      attempt.got = Outcome::kOk;
    } catch (const workspace::WorkspaceTransientError& e) {
      attempt.got =
          e.may_have_been_admitted() ? Outcome::kTransientAdmitted : Outcome::kTransientRefused;
      attempt.message = e.what();
      attempt.retry_after = e.retry_after();
    } catch (const workspace::WorkspaceUnavailableError& e) {
      attempt.message = std::string("unavailable: ") + e.what();
    } catch (const workspace::WorkspaceError& e) {
      attempt.got = Outcome::kError;
      attempt.message = e.what();
    } catch (const std::exception& e) {
      attempt.message = std::string("untyped: ") + e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start,
              fault_ == Fault::kHuge ? kNoHangHuge : kNoHang)
        << "the operation hung";
    return attempt;
  }

  // The outcome is one the cell allows, and its error is typed, bounded and
  // free of the key.
  void check(const Attempt& attempt) {
    const std::vector<Outcome> want = expected_outcomes(op_, fault_);
    const std::string& message = attempt.message;
    ASSERT_TRUE(attempt.got.has_value())
        << "expected " << outcome_list(want) << ", got " << message;
    const Outcome got = *attempt.got;
    EXPECT_NE(std::find(want.begin(), want.end(), got), want.end())
        << "expected " << outcome_list(want) << ", got " << outcome_name(got) << ": " << message;
    got_ = got;
    if (got != Outcome::kOk) {
      EXPECT_FALSE(message.empty());
      EXPECT_EQ(message.find(server_.api_key()), std::string::npos)
          << "the key leaked into: " << message;
      EXPECT_LT(message.size(), 4096u) << "an error message carries a whole answer";
    }
    if (fault_ == Fault::k429) {
      ASSERT_TRUE(attempt.retry_after.has_value()) << message;
      EXPECT_EQ(attempt.retry_after->count(), 7);
    }
    if (got == Outcome::kOk && (op_ == Op::kExec || op_ == Op::kExecLong)) {
      EXPECT_EQ(attempt.read_back, "ok\n");
    }
    if (got == Outcome::kOk && op_ == Op::kRead) {
      EXPECT_EQ(attempt.read_back, is_lying_2xx(fault_) ? rule_for(op_, fault_).body : "hello");
    }
  }

  LizardOptions options() const {
    LizardOptions o = MockFixture::options();
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
      EXPECT_TRUE(Eventually([&] { return count_creates() >= 1; }, 60s));
      EXPECT_EQ(count_creates(), 1u) << "a create was repeated";
      const std::size_t live = handler_ran(fault_) ? 1u : 0u;
      EXPECT_TRUE(Eventually([&] { return server_.live_sandboxes() == live; }, 60s))
          << "live sandboxes " << server_.live_sandboxes() << ", expected " << live;
      return;
    }
    if (op_ == Op::kKill) {
      EXPECT_NO_THROW(backend.destroy());
      if (is_lying_2xx(fault_) && got_ == Outcome::kOk) {
        // The server said it deleted it and did not: the backend believed it.
        EXPECT_EQ(server_.live_sandboxes(), 1u);
      } else {
        EXPECT_TRUE(Eventually([&] { return server_.live_sandboxes() == 0; }, 60s));
      }
      EXPECT_THROW(backend.run(Shell{"true"}), workspace::WorkspaceUnavailableError);
      return;
    }
    const auto next = backend.run(Shell{kRunScript});
    EXPECT_EQ(next.exit_code, 0);
    EXPECT_EQ(next.out, "ok\n");
    if (sandbox_id.empty()) sandbox_id = backend.ref()->id;
    EXPECT_EQ(server_.live_sandboxes(), 1u) << "a second sandbox exists";
    EXPECT_LE(count_creates(), op_ == Op::kCreate ? 2u : 0u);

    // How many times the marker command ran: the faulted run (when it ran at
    // all, exactly once) plus the follow-up.
    std::size_t faulted_runs = 0;
    if (op_ == Op::kExec) faulted_runs = (fault_ == Fault::k429 || is_lying_2xx(fault_)) ? 0 : 1;
    // The long run started with the first exec, before the fault.
    if (op_ == Op::kExecLong) faulted_runs = 1;
    if (op_ == Op::kCreate || op_ == Op::kAttach || op_ == Op::kExec || op_ == Op::kExecLong) {
      EXPECT_TRUE(
          Eventually([&] { return marker_lines(server_, sandbox_id) == faulted_runs + 1; }, 60s))
          << "the marker command ran " << marker_lines(server_, sandbox_id) << " times; expected "
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
    for (const auto& e : server_.requests()) {
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

  std::size_t count_creates() const { return count(is_create); }

  Op op_;
  Fault fault_;
  Outcome got_ = Outcome::kOk;
  std::unique_ptr<LizardSandboxBackend> backend_;
  std::string sandbox_id_;
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
