// The API key never leaves the auth header, and caller input is passed
// literally.
//
// CanaryConformanceRun runs the whole conformance suite (common and lizard
// rules) on the embedded mock with a canary key and scans, for every rule:
// the mock's journal (path, query, body, Accept of every request), every log
// line the backends wrote, each rule's result line and reason (exception
// messages end up there), and everything written to stdout/stderr meanwhile.
// CanaryIsNotInsideTheSandbox scans the sandbox's own view: the environment
// of a command, /proc/*/cmdline and /proc/*/environ of every process in the
// sandbox while a run is in flight.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fault_support.h"
#include "lizard/conformance/backend_factory.h"
// PlatformControl, FaultSpec and HttpRequestRecord are moving out of
// backend_factory.h into platform_control.h (the lizard profile's view);
// this builds on either side of that move.
#if __has_include("lizard/conformance/platform_control.h")
#include "lizard/conformance/platform_control.h"
#endif
#include "lizard/conformance/runner.h"
#include "lizard/mock/mock_server.h"
#include "lizard/testing/faults.h"
#include "lizard/testing/matchers.h"
#include "lizard/testing/mock_fixture.h"
#include "lizard/workspace/errors.h"
#include "lizard/workspace/lizard_sandbox_backend.h"

namespace lizard::faults {
namespace {

using conformance::BackendFactory;
using conformance::BackendSession;
using conformance::PlatformControl;
using lizard::testing::ThrowsInvalidArgument;
using mock::MockServer;
using workspace::Argv;
namespace fault = lizard::testing::fault;
using workspace::LizardOptions;
using workspace::LizardSandboxBackend;
using workspace::Shell;

// Distinctive, so that any hit is the key and nothing else.
const std::string kCanary = "liz_CANARY_9d41c7e2b35f4a86";

// Every place the canary was seen, shared by the sessions of a run.
struct Findings {
  std::mutex mutex;
  std::vector<std::string> hits;
  std::atomic<std::size_t> scanned_bytes{0};
  void scan(const std::string& where, const std::string& text) {
    scanned_bytes += text.size();
    if (text.find(kCanary) == std::string::npos) return;
    std::lock_guard lock(mutex);
    hits.push_back(where + ": " + text.substr(0, 200));
  }
};

// The reference mock session (conformance/src/lizard/lizard_factory.cc) with
// a canary key, scanning its journal and log when the rule ends.
class CanarySession : public BackendSession, public PlatformControl {
 public:
  CanarySession(const conformance::RuleInfo& rule, Findings& findings)
      : rule_id_(rule.id), findings_(findings), server_(mock_options(rule)) {
    options_.api_key = kCanary;
    options_.project = server_.project_id();
    options_.api_url = server_.url();
    options_.log = [this](std::string_view line) {
      std::lock_guard lock(log_mutex_);
      log_.emplace_back(line);
    };
    exec_limit_ = rule.wants_short_exec_limit ? std::chrono::milliseconds(1500)
                                              : mock::MockOptions{}.exec_limit;
  }
  ~CanarySession() override {
    for (const auto& e : server_.requests()) {
      findings_.scan(rule_id_ + " journal " + e.method + " " + e.path,
                     e.path + "?" + e.query + "\n" + e.body + "\n" + e.accept);
    }
    for (const auto& line : log_lines()) findings_.scan(rule_id_ + " log", line);
  }

  static mock::MockOptions mock_options(const conformance::RuleInfo& rule) {
    mock::MockOptions o;
    o.api_keys = {kCanary};
    if (rule.wants_short_exec_limit) o.exec_limit = std::chrono::milliseconds(1500);
    return o;
  }

  // BackendSession
  std::unique_ptr<workspace::WorkspaceBackend> make() override {
    return std::make_unique<LizardSandboxBackend>(options_);
  }
  std::unique_ptr<workspace::WorkspaceBackend> attach(const workspace::WorkspaceRef& ref) override {
    LizardOptions o = options_;
    o.ref = ref;
    return std::make_unique<LizardSandboxBackend>(o);
  }
  bool can_attach() const override { return true; }
  void destroy_environment(const workspace::WorkspaceRef& ref) override {
    workspace::LizardSandbox(options_).destroy(ref);
  }
  workspace::Capabilities capabilities() const override {
    using workspace::Capability;
    return {Capability::kCommands, Capability::kFilesystem, Capability::kRealpath};
  }
  conformance::Deviations deviations() const override {
    conformance::Deviations d;
    d.commands_run_as_root = true;
    return d;
  }
  std::vector<std::string> secrets() const override { return {kCanary}; }
  PlatformControl* platform() override { return this; }

  // PlatformControl
  std::vector<conformance::HttpRequestRecord> requests() const override {
    std::vector<conformance::HttpRequestRecord> out;
    for (const auto& e : server_.requests())
      out.push_back({e.method, e.path, e.query, e.status, e.body});
    return out;
  }
  void clear_requests() override {
    // Scan before forgetting.
    for (const auto& e : server_.requests()) {
      findings_.scan(rule_id_ + " journal " + e.method + " " + e.path,
                     e.path + "?" + e.query + "\n" + e.body + "\n" + e.accept);
    }
    server_.clear_journal();
  }
  void expire_all() override { server_.advance_clock(std::chrono::hours(48)); }
  void add_fault(const conformance::FaultSpec& spec) override {
    server_.add_fault(fault_rule(spec).times(spec.times));
  }
  static fault::Builder fault_rule(const conformance::FaultSpec& spec) {
    using K = conformance::FaultSpec::Kind;
    switch (spec.kind) {
      case K::kRespond:
        return fault::respond(spec.method, spec.path_pattern, spec.status).body(spec.body);
      case K::kClose:
        return fault::close(spec.method, spec.path_pattern);
      case K::kDelay:
        return fault::delay(spec.method, spec.path_pattern, spec.delay);
      case K::kCloseAfterHandling:
        break;
    }
    return fault::close_after_handling(spec.method, spec.path_pattern);
  }
  void clear_faults() override { server_.clear_faults(); }
  std::chrono::milliseconds exec_limit() const override { return exec_limit_; }
  std::unique_ptr<workspace::WorkspaceBackend> make_with(
      const conformance::BackendOverrides& o) override {
    LizardOptions options = options_;
    if (o.size) options.size = *o.size;
    if (o.lifetime) options.lifetime = *o.lifetime;
    if (!o.env.empty()) options.env = o.env;
    if (o.api_key) options.api_key = *o.api_key;
    if (o.ref) options.ref = o.ref;
    return std::make_unique<LizardSandboxBackend>(options);
  }
  std::vector<std::string> log_lines() const override {
    std::lock_guard lock(log_mutex_);
    return log_;
  }

 private:
  std::string rule_id_;
  Findings& findings_;
  MockServer server_;
  LizardOptions options_;
  std::chrono::milliseconds exec_limit_{0};
  mutable std::mutex log_mutex_;
  std::vector<std::string> log_;
};

class CanaryFactory : public BackendFactory {
 public:
  explicit CanaryFactory(Findings& findings) : findings_(findings) {}
  std::string name() const override { return "lizard (embedded mock, canary key)"; }
  std::string profile() const override { return "lizard"; }
  std::unique_ptr<BackendSession> open(const conformance::RuleInfo& rule) override {
    return std::make_unique<CanarySession>(rule, findings_);
  }

 private:
  Findings& findings_;
};

TEST(Secrets, CanaryConformanceRun) {
  Findings findings;
  CanaryFactory factory(findings);
  std::ostringstream lines;
  conformance::RunnerOptions options;
  options.jobs = 4;
  options.out = &lines;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const conformance::RunReport report = conformance::run_rules(factory, options);
  const std::string out = ::testing::internal::GetCapturedStdout();
  const std::string err = ::testing::internal::GetCapturedStderr();
  findings.scan("stdout", out);
  findings.scan("stderr", err);
  findings.scan("runner lines", lines.str());
  for (const auto& rule : report.rules) findings.scan("reason of " + rule.id, rule.reason);
  for (const auto& note : report.notes) findings.scan("note", note);

  // The run must have exercised the backend, or the scan proves nothing.
  EXPECT_GT(report.rules.size(), 50u);
  EXPECT_GT(report.count(conformance::Status::kPass), 50);
  EXPECT_GT(findings.scanned_bytes.load(), 100000u);
  EXPECT_TRUE(findings.hits.empty())
      << findings.hits.size()
      << " hits, first: " << (findings.hits.empty() ? "" : findings.hits.front());
  std::cout << "canary run: " << report.rules.size() << " rules ("
            << report.count(conformance::Status::kPass) << " pass, "
            << report.count(conformance::Status::kFail) << " fail, "
            << report.count(conformance::Status::kSkip) << " skip) in " << report.wall_seconds
            << " s; " << findings.scanned_bytes.load() << " bytes scanned\n";
  for (const auto& rule : report.rules) {
    if (rule.status == conformance::Status::kFail) {
      std::cout << "  FAIL " << rule.id << ": " << rule.reason << "\n";
    }
  }
}

// A mock whose one key is the canary; backends on it carry a variable of their own.
class SandboxView : public lizard::testing::MockFixture {
 protected:
  SandboxView() : MockFixture(mock::MockOptions{.api_keys = {kCanary}}) {}
  LizardOptions options() const {
    LizardOptions o = MockFixture::options();
    o.env = {{"BACKEND_VAR", "1"}};
    return o;
  }
};

TEST_F(SandboxView, CanaryIsNotInTheEnvironmentOrAnyCommandLineInsideTheSandbox) {
  LizardSandboxBackend backend(options());
  const auto env = backend.run(Argv{{"env"}});
  EXPECT_NE(env.out.find("BACKEND_VAR=1"), std::string::npos) << env.out;
  EXPECT_EQ(env.out.find(kCanary), std::string::npos);
  EXPECT_EQ(env.out.find("LIZARD_API_KEY"), std::string::npos);
  // A run in flight, so its wrapper, supervisor and readers are there to be read.
  std::thread slow([&] { backend.run(Shell{"sleep 1.5"}); });
  const auto scan = backend.run(
      Shell{"sleep 0.5; n=0; for p in /proc/[0-9]*; do n=$((n+1)); tr '\\0' ' ' <$p/cmdline; echo; "
            "tr '\\0' '\\n' <$p/environ; done 2>/dev/null; echo \"processes=$n\""});
  slow.join();
  EXPECT_NE(scan.out.find("sleep 1.5"), std::string::npos)
      << "the scan did not see the in-flight run:\n"
      << scan.out.substr(0, 2000);
  // The environ scan works: it sees the backend's own variable.
  EXPECT_NE(scan.out.find("BACKEND_VAR=1"), std::string::npos);
  EXPECT_EQ(scan.out.find(kCanary), std::string::npos) << scan.out.substr(0, 4000);
  // And the sandbox's files: nothing under /tmp, the home or the workspace
  // holds it (the pattern is assembled in the shell so that no file of this
  // run holds it whole).
  const std::string head = kCanary.substr(0, 8);
  const std::string tail = kCanary.substr(8);
  const auto grep = backend.run(
      Shell{"h=" + head + "; t=" + tail + "; grep -rl -- \"$h$t\" /tmp /root /workspace; true"});
  EXPECT_EQ(grep.out, "");
  EXPECT_EQ(grep.err, "");
}

TEST(Secrets, AnEchoingServerDoesNotPutTheKeyIntoAnExceptionOrLog) {
  // A proxy that quotes the request (headers included) in its error page.
  RawServer server([](int fd, const std::string& request) {
    const std::string body = "bad gateway; your request was:\n" + request;
    send_all(fd, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
  });
  std::vector<std::string> log;
  LizardOptions o;
  o.api_key = kCanary;
  o.project = "prj_x";
  o.api_url = server.url();
  o.log = [&](std::string_view line) { log.emplace_back(line); };
  LizardSandboxBackend backend(o);
  try {
    backend.run(Shell{"true"});
    FAIL() << "no error";
  } catch (const std::exception& e) {
    EXPECT_EQ(std::string(e.what()).find(kCanary), std::string::npos) << e.what();
  }
  ASSERT_FALSE(log.empty());
  for (const auto& line : log) EXPECT_EQ(line.find(kCanary), std::string::npos) << line;
  ASSERT_FALSE(server.requests().empty());
  EXPECT_NE(server.requests().front().find(kCanary), std::string::npos)
      << "the echo did not carry the key, so the test proves nothing";
}

// --- literal input -------------------------------------------------------------------

class LiteralInput : public SandboxView {};

TEST_F(LiteralInput, PathsWithNulAreInvalidArgumentsBeforeAnyRequest) {
  LizardSandboxBackend backend(options());
  server_.clear_journal();
  const std::string nul_path = std::string("/workspace/a\0b", 14);
  EXPECT_THAT([&] { backend.read_bytes(nul_path); }, ThrowsInvalidArgument());
  EXPECT_THAT([&] { backend.write_bytes(nul_path, "x"); }, ThrowsInvalidArgument());
  EXPECT_THAT([&] { backend.stat(nul_path); }, ThrowsInvalidArgument());
  EXPECT_THAT([&] { backend.list_dir(nul_path); }, ThrowsInvalidArgument());
  EXPECT_THAT([&] { backend.make_dir(nul_path); }, ThrowsInvalidArgument());
  EXPECT_THAT([&] { backend.remove(nul_path); }, ThrowsInvalidArgument());
  EXPECT_THAT([&] { backend.exists(nul_path); }, ThrowsInvalidArgument());
  EXPECT_THAT([&] { backend.realpath(nul_path); }, ThrowsInvalidArgument());
  workspace::RunOptions ro;
  ro.env = {{"A", std::string("x\0y", 3)}};
  EXPECT_THAT([&] { backend.run(Argv{{"true"}}, ro); }, ThrowsInvalidArgument());
  EXPECT_THAT([&] { backend.run(Argv{{"echo", std::string("a\0", 2)}}); }, ThrowsInvalidArgument());
  EXPECT_TRUE(server_.requests().empty()) << "a request went out";
}

const std::vector<std::string>& hostile_strings() {
  static const std::vector<std::string> kStrings = {
      "$(touch /tmp/pwned)",
      "`touch /tmp/pwned`",
      "a\nb\nc",
      "it's \"quoted\"",
      "; touch /tmp/pwned;",
      "$HOME ${PATH} $1",
      "-n",
      "--",
      "a b\tc",
      "*",
      "\\\\ back\\",
      "'$(touch /tmp/pwned)'",
      "\"; touch /tmp/pwned",
      "| cat",
      "%s%n%x",
      "é ü 日本",
  };
  return kStrings;
}

TEST_F(LiteralInput, HostileFileNamesAreWrittenReadListedAndRemovedLiterally) {
  LizardSandboxBackend backend(options());
  backend.make_dir("/workspace/h");
  std::size_t i = 0;
  for (const auto& s : hostile_strings()) {
    std::string name = s;
    for (auto& c : name) {
      if (c == '/') c = '_';
    }
    const std::string path = "/workspace/h/" + std::to_string(i++) + name;
    backend.write_bytes(path, s);
    EXPECT_EQ(backend.read_bytes(path), s) << path;
    EXPECT_TRUE(backend.exists(path)) << path;
    EXPECT_EQ(backend.stat(path).size, s.size()) << path;
    EXPECT_EQ(backend.realpath(path), path);
    backend.make_dir(path + ".d");
    EXPECT_TRUE(backend.stat(path + ".d").is_dir);
  }
  std::size_t listed = 0;
  for (const auto& e : backend.list_dir("/workspace/h")) {
    if (!e.is_dir) ++listed;
  }
  EXPECT_EQ(listed, hostile_strings().size());
  EXPECT_FALSE(backend.exists("/tmp/pwned")) << "a shell interpreted a file name";
}

TEST_F(LiteralInput, HostileArgvItemsAndEnvValuesReachTheProgramLiterally) {
  LizardSandboxBackend backend(options());
  for (const auto& s : hostile_strings()) {
    const auto argv = backend.run(Argv{{"printf", "%s", s}});
    EXPECT_EQ(argv.out, s);
    workspace::RunOptions ro;
    ro.env = {{"HOSTILE", s}, {"WEIRD_NAME_1", s}};
    const auto env = backend.run(Argv{{"printenv", "HOSTILE"}}, ro);
    EXPECT_EQ(env.out, s + "\n");
    // A shell script reads the value as data, never as code.
    const auto shell = backend.run(Shell{"printf %s \"$HOSTILE\""}, ro);
    EXPECT_EQ(shell.out, s);
  }
  EXPECT_FALSE(backend.exists("/tmp/pwned")) << "a shell interpreted an argument";
}

}  // namespace
}  // namespace lizard::faults
