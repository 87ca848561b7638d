// Self-tests of lizard::testing (testing/include/lizard/testing/), the
// library the other tests stand on: Eventually's verdicts and message, each
// matcher matching, not matching, and saying what was thrown instead, the
// fault builders' rules (and one acting on the mock), and MockFixture's
// options and journal predicates.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "lizard/api/client.h"
#include "lizard/mock/mock_server.h"
#include "lizard/testing/eventually.h"
#include "lizard/testing/faults.h"
#include "lizard/testing/matchers.h"
#include "lizard/testing/mock_fixture.h"
#include "lizard/testing/process.h"
#include "lizard/workspace/errors.h"

namespace lizard::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;
using workspace::WorkspaceAuthenticationError;
using workspace::WorkspaceError;
using workspace::WorkspaceTransientError;
using workspace::WorkspaceUnavailableError;
using Callable = std::function<void()>;

// What `matcher` says about `callable` when it does not match.
template <typename M>
std::string explain(const M& matcher, const Callable& callable) {
  const ::testing::Matcher<const Callable&> m = matcher;
  ::testing::StringMatchResultListener listener;
  EXPECT_FALSE(m.MatchAndExplain(callable, &listener)) << "the matcher matched";
  return listener.str();
}

Callable throws_path_error(std::errc code) {
  return
      [code] { throw std::filesystem::filesystem_error("op", "/p", std::make_error_code(code)); };
}
const Callable kNothing = [] {};

// --- Eventually -------------------------------------------------------------------

TEST(EventuallyTest, HoldsAsSoonAsTheConditionDoes) {
  int calls = 0;
  EXPECT_TRUE(Eventually([&] { return ++calls == 3; }, 20s, 1ms));
  EXPECT_EQ(calls, 3);
}

TEST(EventuallyTest, FailsAfterItsLimitAndSaysHowLongItWaited) {
  const auto start = std::chrono::steady_clock::now();
  const ::testing::AssertionResult result = Eventually([] { return false; }, 100ms, 10ms);
  EXPECT_FALSE(result);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 100ms);
  EXPECT_THAT(result.message(), HasSubstr("did not hold within 100 ms"));
}

TEST(EventuallyTest, LooksOnceMoreAtTheDeadline) {
  // Polled once too early, then not again before the limit: the last look decides.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(
      Eventually([&] { return std::chrono::steady_clock::now() - start >= 50ms; }, 50ms, 200ms));
}

// --- matchers -----------------------------------------------------------------------

TEST(MatchersTest, ThrowsPathErrorComparesTheCode) {
  const Callable enoent = throws_path_error(std::errc::no_such_file_or_directory);
  EXPECT_THAT(enoent, ThrowsPathError(std::errc::no_such_file_or_directory));
  EXPECT_THAT(enoent, ThrowsPathError());
  EXPECT_THAT(enoent, Not(ThrowsPathError(std::errc::is_a_directory)));
  const std::string why = explain(ThrowsPathError(std::errc::is_a_directory), enoent);
  EXPECT_THAT(why, HasSubstr(std::make_error_code(std::errc::no_such_file_or_directory).message()));
  EXPECT_THAT(why, HasSubstr("/p"));
  const Callable invalid = [] { throw std::invalid_argument("a relative path"); };
  EXPECT_THAT(invalid, Not(ThrowsPathError()));
  EXPECT_THAT(explain(ThrowsPathError(std::errc::is_a_directory), invalid),
              HasSubstr("a relative path"));
  EXPECT_THAT(explain(ThrowsPathError(), kNothing), HasSubstr("does not throw"));
}

TEST(MatchersTest, ThrowsUnavailableTakesSubclassesAndAMessagePart) {
  const Callable gone = [] { throw WorkspaceUnavailableError("sandbox sbx_1 is paused"); };
  const Callable rejected = [] { throw WorkspaceAuthenticationError("key rejected"); };
  const Callable transient = [] { throw WorkspaceTransientError("reset", true); };
  EXPECT_THAT(gone, ThrowsUnavailable());
  EXPECT_THAT(rejected, ThrowsUnavailable());
  EXPECT_THAT(gone, ThrowsUnavailable("is paused"));
  EXPECT_THAT(gone, Not(ThrowsUnavailable("expired")));
  EXPECT_THAT(transient, Not(ThrowsUnavailable()));
  EXPECT_THAT(explain(ThrowsUnavailable(), transient), HasSubstr("reset"));
  EXPECT_THAT(kNothing, Not(ThrowsUnavailable()));
}

TEST(MatchersTest, ThrowsInvalidArgumentTakesAMessagePart) {
  const Callable invalid = [] { throw std::invalid_argument("timeout must be positive"); };
  EXPECT_THAT(invalid, ThrowsInvalidArgument());
  EXPECT_THAT(invalid, ThrowsInvalidArgument("positive"));
  EXPECT_THAT(invalid, Not(ThrowsInvalidArgument("argv")));
  const Callable other = [] { throw std::runtime_error("positive"); };
  EXPECT_THAT(other, Not(ThrowsInvalidArgument()));
  EXPECT_THAT(explain(ThrowsInvalidArgument(), other), HasSubstr("std::runtime_error"));
}

TEST(MatchersTest, ThrowsTransientComparesAdmittedAndStatus) {
  const Callable refused = [] { throw WorkspaceTransientError("slow down", false, 429); };
  const Callable dropped = [] { throw WorkspaceTransientError("reset", true); };
  EXPECT_THAT(refused, ThrowsTransient(false));
  EXPECT_THAT(refused, ThrowsTransient(false, 429));
  EXPECT_THAT(refused, Not(ThrowsTransient(true)));
  EXPECT_THAT(refused, Not(ThrowsTransient(false, 503)));
  EXPECT_THAT(dropped, ThrowsTransient(true));
  EXPECT_THAT(dropped, Not(ThrowsTransient(true, 429)));  // no status at all
  EXPECT_THAT(explain(ThrowsTransient(true), refused), HasSubstr("may_have_been_admitted"));
  EXPECT_THAT(explain(ThrowsTransient(false, 503), refused), HasSubstr("http_status"));
}

TEST(MatchersTest, ThrowsWorkspaceErrorTakesAnyKind) {
  const Callable plain = [] { throw WorkspaceError("malformed JSON in the answer"); };
  const Callable transient = [] { throw WorkspaceTransientError("reset by peer", true); };
  EXPECT_THAT(plain, ThrowsWorkspaceError());
  EXPECT_THAT(plain, ThrowsWorkspaceError("malformed JSON"));
  EXPECT_THAT(transient, ThrowsWorkspaceError("reset"));
  EXPECT_THAT(plain, Not(ThrowsWorkspaceError("reset")));
  const Callable outside = [] { throw std::runtime_error("malformed JSON"); };
  EXPECT_THAT(outside, Not(ThrowsWorkspaceError()));
}

TEST(MatchersTest, ThrowsNonTransientErrorRefusesTheTransientKind) {
  const Callable plain = [] { throw WorkspaceError("an answer larger than 4096 bytes"); };
  const Callable transient = [] { throw WorkspaceTransientError("larger than 4096 bytes", true); };
  EXPECT_THAT(plain, ThrowsNonTransientError());
  EXPECT_THAT(plain, ThrowsNonTransientError("larger than"));
  EXPECT_THAT(plain, Not(ThrowsNonTransientError("malformed")));
  EXPECT_THAT(transient, Not(ThrowsNonTransientError()));
  EXPECT_THAT(explain(ThrowsNonTransientError(), kNothing), HasSubstr("does not throw"));
}

TEST(MatchersTest, AMatcherIsAPredicateToo) {
  EXPECT_TRUE(::testing::Value(throws_path_error(std::errc::permission_denied),
                               ThrowsPathError(std::errc::permission_denied)));
  EXPECT_FALSE(::testing::Value(kNothing, ThrowsPathError()));
}

// --- fault builders -----------------------------------------------------------------

TEST(FaultBuildersTest, RespondAnswersAStatusOnEveryMatchUnlessLimited) {
  const mock::FaultRule every = fault::respond("POST", "/api/sandboxes", 503);
  EXPECT_EQ(every.method, "POST");
  EXPECT_EQ(every.path_pattern, "/api/sandboxes");
  EXPECT_EQ(every.action, mock::FaultRule::Action::kRespond);
  EXPECT_EQ(every.status, 503);
  EXPECT_EQ(every.body, mock::FaultRule{}.body);
  EXPECT_EQ(every.times, -1);
  EXPECT_EQ(every.probability, 1.0);
  const mock::FaultRule once =
      fault::respond("GET", "/api/sandboxes/*/files", 429).body("slow", "text/plain").times(1);
  EXPECT_EQ(once.status, 429);
  EXPECT_EQ(once.body, "slow");
  EXPECT_EQ(once.content_type, "text/plain");
  EXPECT_EQ(once.times, 1);
}

TEST(FaultBuildersTest, EachBuilderSetsItsAction) {
  const mock::FaultRule close = fault::close("POST", "/api/sandboxes/*/exec");
  EXPECT_EQ(close.action, mock::FaultRule::Action::kClose);
  EXPECT_EQ(close.path_pattern, "/api/sandboxes/*/exec");
  const mock::FaultRule after = fault::close_after_handling("POST", "/api/sandboxes");
  EXPECT_EQ(after.action, mock::FaultRule::Action::kCloseAfterHandling);
  const mock::FaultRule delay = fault::delay("GET", "/api/sandboxes/*", 1500ms);
  EXPECT_EQ(delay.action, mock::FaultRule::Action::kDelay);
  EXPECT_EQ(delay.delay, 1500ms);
  const mock::FaultRule truncate = fault::truncate("GET", "/api/sandboxes/*/files", 7);
  EXPECT_EQ(truncate.action, mock::FaultRule::Action::kTruncate);
  EXPECT_EQ(truncate.truncate_at, 7u);
  const mock::FaultRule sometimes = fault::close("*", "/api/**").probability(0.25, 42).times(10);
  EXPECT_EQ(sometimes.method, "*");
  EXPECT_EQ(sometimes.probability, 0.25);
  EXPECT_EQ(sometimes.seed, 42u);
  EXPECT_EQ(sometimes.times, 10);
}

TEST(FaultBuildersTest, ABuilderEndingHereGivesUpItsBody) {
  fault::Builder builder = fault::respond("GET", "/x", 200);
  builder.body(std::string(1 << 20, ' '));
  const mock::FaultRule copied = builder;
  EXPECT_EQ(builder.rule().body.size(), 1u << 20);
  const mock::FaultRule moved = std::move(builder);
  EXPECT_EQ(moved.body.size(), 1u << 20);
  EXPECT_EQ(copied.body, moved.body);
}

// --- the fixture --------------------------------------------------------------------

using MockFixtureTest = MockFixture;

// A rule from a builder acts on the mock: one refused create, then a real
// one; the journal predicates pick out creates, execs and sandbox deletes.
TEST_F(MockFixtureTest, BuildersActOnTheMockAndPredicatesReadTheJournal) {
  EXPECT_EQ(options_for(server_).api_url, server_.url());
  EXPECT_EQ(options().api_key, server_.api_key());
  EXPECT_EQ(options().project, server_.project_id());
  server_.add_fault(fault::respond("POST", "/api/sandboxes", 429).times(1));
  auto backend = make_backend();
  EXPECT_THAT([&] { backend->run(workspace::Argv{{"true"}}); }, ThrowsTransient(false, 429));
  EXPECT_EQ(backend->run(workspace::Argv{{"true"}}).exit_code, 0);
  backend->write_bytes("/workspace/f", "x");
  backend->remove("/workspace/f");  // a file's DELETE, not a sandbox's
  EXPECT_EQ(count(is_create), 2u);
  EXPECT_EQ(count(is_exec), 1u);
  EXPECT_EQ(count(is_delete), 0u);
  backend->destroy();
  EXPECT_EQ(count(is_delete), 1u);
}

class FirecrackerFixtureTest : public MockFixture {
 protected:
  FirecrackerFixtureTest() : MockFixture(firecracker()) {}
};

// The kubernetes era refuses pause with 501; this fixture's mock serves it.
TEST_F(FirecrackerFixtureTest, FirecrackerPlaysThatEra) {
  auto backend = make_backend();
  backend->run(workspace::Argv{{"true"}});
  api::Client client({.api_key = server_.api_key(), .api_url = server_.url()});
  EXPECT_NO_THROW(client.pause_sandbox(backend->ref()->id));
  client.resume_sandbox(backend->ref()->id);
}

// --- process samples -----------------------------------------------------------------

TEST(ProcessTest, SamplesFollowThisProcess) {
  const std::size_t fds = open_fds();
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(open_fds(), fds + 1);
  ::close(fd);
  EXPECT_EQ(open_fds(), fds);

  const long before = threads();
  std::atomic<bool> stop{false};
  std::thread extra([&] {
    while (!stop) std::this_thread::sleep_for(1ms);
  });
  EXPECT_GE(threads(), 2);
  stop = true;
  extra.join();
  EXPECT_TRUE(Eventually([&] { return threads() <= before; }));

  EXPECT_GT(rss_kib(), 0);
  EXPECT_GE(status_field("VmHWM"), rss_kib() / 2);  // the peak is at least about the current
  EXPECT_EQ(status_field("NoSuchField"), -1);
}

TEST(ProcessTest, HostProcessesIncludeThisOne) {
  std::ifstream in("/proc/self/cmdline");
  std::string self;
  ASSERT_TRUE(std::getline(in, self, '\0'));
  EXPECT_GE(host_processes_with(self), 1) << self;
  EXPECT_EQ(host_processes_with("lizard-no-process-has-this-in-its-command-line-" +
                                std::to_string(::getpid()) + "x"),
            0);
}

}  // namespace
}  // namespace lizard::testing
