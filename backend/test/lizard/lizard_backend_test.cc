// LizardSandboxBackend's lifecycle against the embedded mock: create once,
// attach, destroy, expiry, credentials, and what each operation costs.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lizard/api/client.h"
#include "lizard/mock/mock_server.h"
#include "lizard_backend_test.h"

namespace lizard::workspace {
namespace {

using namespace lizard_test;

// --- lifecycle ----------------------------------------------------------------

TEST_F(LizardBackendTest, NoRequestAtConstruction) {
  LizardSandboxBackend backend(options());
  EXPECT_FALSE(backend.ref().has_value());
  EXPECT_EQ(backend.working_dir(), "/workspace");
  EXPECT_TRUE(journal().empty());
}

TEST_F(LizardBackendTest, InvalidSizeIsRejectedBeforeAnyRequest) {
  for (const char* size : {"tiny", "", "Medium", "xl"}) {
    auto o = options();
    o.size = size;
    EXPECT_THROW(LizardSandboxBackend{o}, std::invalid_argument) << size;
  }
  EXPECT_TRUE(journal().empty());
}

TEST_F(LizardBackendTest, ConcurrentFirstUseCreatesExactlyOneSandbox) {
  LizardSandboxBackend backend(options());
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      if (i % 2 == 0) {
        if (backend.run(Shell{"true"}).exit_code == 0) ++ok;
      } else {
        backend.write_bytes("/workspace/f" + std::to_string(i), "x");
        ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 8);
  EXPECT_EQ(count_if(journal(), is_create), 1u);
  EXPECT_EQ(server_.live_sandboxes(), 1u);
  ASSERT_TRUE(backend.ref().has_value());
  EXPECT_EQ(backend.ref()->provider, "lizard");
}

TEST_F(LizardBackendTest, CreateBodyCarriesTemplateSizeLifetimeProjectAndOnlyCallerEnv) {
  auto o = options();
  o.size = "small";
  o.lifetime = 90s;
  o.env = {{"ONE", "1"}};
  o.metadata = {{"owner", "test"}};
  LizardSandboxBackend backend(o);
  backend.run(Shell{"true"});
  const auto j = journal();
  const auto create = std::find_if(j.begin(), j.end(), is_create);
  ASSERT_NE(create, j.end());
  rapidjson::Document body;
  body.Parse(create->body.c_str());
  ASSERT_TRUE(body.IsObject());
  EXPECT_STREQ(body["template"].GetString(), "interpreter");
  EXPECT_STREQ(body["size"].GetString(), "small");
  EXPECT_EQ(body["timeoutMs"].GetInt64(), 90000);
  EXPECT_EQ(std::string(body["projectId"].GetString()), server_.project_id());
  ASSERT_TRUE(body.HasMember("envs"));
  EXPECT_EQ(body["envs"].MemberCount(), 1u);
  EXPECT_STREQ(body["envs"]["ONE"].GetString(), "1");
  EXPECT_STREQ(body["metadata"]["owner"].GetString(), "test");
  EXPECT_FALSE(body.HasMember("lizardToken"));
}

TEST_F(LizardBackendTest, CreateBodyOmitsEnvsWhenNoneGiven) {
  LizardSandboxBackend backend(options());
  backend.run(Shell{"true"});
  const auto j = journal();
  const auto create = std::find_if(j.begin(), j.end(), is_create);
  ASSERT_NE(create, j.end());
  rapidjson::Document body;
  body.Parse(create->body.c_str());
  EXPECT_FALSE(body.HasMember("envs"));
  EXPECT_EQ(body["timeoutMs"].GetInt64(), 3600000);
  EXPECT_STREQ(body["size"].GetString(), "medium");
}

TEST_F(LizardBackendTest, AttachByRefSeesTheSameFilesAndSendsNoCreateOrRenewal) {
  WorkspaceRef ref;
  {
    LizardSandboxBackend first(options());
    first.write_bytes("/workspace/shared.txt", "hello");
    ref = *first.ref();
  }  // the backend object goes; the sandbox stays
  server_.clear_journal();
  auto attached = LizardSandbox(options()).attach(ref);
  EXPECT_EQ(attached->ref(), ref);
  EXPECT_TRUE(journal().empty());  // no I/O until first use
  EXPECT_EQ(attached->run(Shell{"cat shared.txt"}).out, "hello");
  const auto j = journal();
  EXPECT_EQ(count_if(j, is_create), 0u);
  EXPECT_EQ(
      count_if(j,
               [](const JournalEntry& e) { return e.path.find("/timeout") != std::string::npos; }),
      0u);
  EXPECT_EQ(count_if(j, [](const JournalEntry& e) { return e.method == "DELETE"; }), 0u);
}

TEST_F(LizardBackendTest, UnknownRefIsUnavailableAndCreatesNothing) {
  auto backend = LizardSandbox(options()).attach({"lizard", "sbx_doesnotexist"});
  EXPECT_THROW(backend->run(Shell{"true"}), WorkspaceUnavailableError);
  EXPECT_THROW(backend->read_bytes("/workspace/x"), WorkspaceUnavailableError);
  EXPECT_EQ(count_if(journal(), is_create), 0u);
  EXPECT_EQ(server_.live_sandboxes(), 0u);
}

TEST_F(LizardBackendTest, DestroyDeletesAndLaterOperationsAreUnavailable) {
  LizardSandboxBackend backend(options());
  backend.run(Shell{"true"});
  const auto ref = *backend.ref();
  backend.destroy();
  backend.destroy();  // twice is fine
  EXPECT_EQ(count_if(journal(), [](const JournalEntry& e) { return e.method == "DELETE"; }), 1u);
  EXPECT_THROW(backend.run(Shell{"true"}), WorkspaceUnavailableError);
  EXPECT_THROW(backend.stat("/workspace"), WorkspaceUnavailableError);
  EXPECT_EQ(backend.ref(), ref);  // still fixed
  auto again = LizardSandbox(options()).attach(ref);
  EXPECT_THROW(again->exists("/workspace"), WorkspaceUnavailableError);
  EXPECT_NO_THROW(LizardSandbox(options()).destroy(ref));  // already gone: fine
  EXPECT_EQ(count_if(journal(), is_create), 1u);
}

TEST_F(LizardBackendTest, ExpiryBetweenOperationsIsUnavailable) {
  auto o = options();
  o.lifetime = 5s;
  LizardSandboxBackend backend(o);
  backend.run(Shell{"true"});
  server_.advance_clock(10s);
  EXPECT_THROW(backend.run(Shell{"true"}), WorkspaceUnavailableError);
  EXPECT_THROW(backend.read_bytes("/workspace/a"), WorkspaceUnavailableError);
  EXPECT_EQ(count_if(journal(), is_create), 1u);
}

TEST_F(LizardBackendTest, RejectedKeyIsAuthenticationErrorOnCreateAndUnavailableOnAttach) {
  auto o = options();
  o.api_key = "liz_wrong_key";
  LizardSandboxBackend backend(o);
  try {
    backend.run(Shell{"true"});
    FAIL() << "expected an authentication error";
  } catch (const WorkspaceAuthenticationError& e) {
    EXPECT_EQ(std::string(e.what()).find("liz_wrong_key"), std::string::npos);
  }
  LizardSandboxBackend real(options());
  real.run(Shell{"true"});
  auto attached = LizardSandbox(o).attach(*real.ref());
  EXPECT_THROW(attached->run(Shell{"true"}), WorkspaceUnavailableError);
}

TEST_F(LizardBackendTest, TheKeyAppearsInNoRequestBodyLogOrEnvironment) {
  std::vector<std::string> log;
  std::mutex log_mutex;
  auto o = options();
  o.log = [&](std::string_view line) {
    std::lock_guard lock(log_mutex);
    log.emplace_back(line);
  };
  LizardSandboxBackend backend(o);
  const auto env = backend.run(Shell{"env"});
  EXPECT_EQ(env.out.find(server_.api_key()), std::string::npos);
  backend.write_bytes("/workspace/f", "data");
  backend.read_bytes("/workspace/f");
  EXPECT_THROW(backend.read_bytes("/workspace/missing"), std::filesystem::filesystem_error);
  for (const auto& e : journal()) {
    EXPECT_EQ(e.body.find(server_.api_key()), std::string::npos) << e.path;
    EXPECT_EQ(e.query.find(server_.api_key()), std::string::npos) << e.path;
  }
  ASSERT_FALSE(log.empty());
  for (const auto& line : log) EXPECT_EQ(line.find(server_.api_key()), std::string::npos);
}

TEST_F(LizardBackendTest, RunEndAndDestructionKeepTheSandbox) {
  {
    LizardSandboxBackend backend(options());
    backend.run(Shell{"true"});
  }
  EXPECT_EQ(count_if(journal(), [](const JournalEntry& e) { return e.method == "DELETE"; }), 0u);
  EXPECT_EQ(server_.live_sandboxes(), 1u);
}

TEST_F(LizardBackendTest, AFailedCreateIsNotRepeated) {
  FaultRule rule;
  rule.method = "POST";
  rule.path_pattern = "/api/sandboxes";
  rule.action = FaultRule::Action::kCloseAfterHandling;
  rule.times = 1;
  server_.add_fault(rule);
  LizardSandboxBackend backend(options());
  try {
    backend.run(Shell{"true"});
    FAIL() << "expected WorkspaceTransientError";
  } catch (const WorkspaceTransientError& e) {
    EXPECT_TRUE(e.may_have_been_admitted());
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected: " << e.what();
  }
  EXPECT_THROW(backend.run(Shell{"true"}), WorkspaceUnavailableError);
  EXPECT_EQ(count_if(journal(), is_create), 1u);
}

TEST_F(LizardBackendTest, PauseIsNotSupportedOnTheKubernetesEra) {
  LizardSandboxBackend backend(options());
  backend.run(Shell{"true"});
  api::Client client({.api_key = server_.api_key(), .api_url = server_.url()});
  try {
    client.pause_sandbox(backend.ref()->id);
    FAIL() << "expected WorkspaceNotSupportedError";
  } catch (const WorkspaceNotSupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("not supported by this platform"), std::string::npos);
  }
}

class LizardPausedTest : public LizardBackendTest {
 protected:
  LizardPausedTest() : LizardBackendTest(MockOptions{.era = mock::Era::kFirecracker}) {}
};

// A paused sandbox answers 409 SANDBOX_PAUSED on its exec and files routes:
// every operation raises the contract's WorkspaceUnavailableError (never
// the client's api::ConflictError), and works again once it is resumed.
TEST_F(LizardPausedTest, EveryOperationOnAPausedSandboxIsUnavailable) {
  LizardSandboxBackend backend(options());
  backend.write_bytes("/workspace/f", "x");
  api::Client client({.api_key = server_.api_key(), .api_url = server_.url()});
  client.pause_sandbox(backend.ref()->id);
  const std::vector<std::pair<std::string, std::function<void()>>> operations = {
      {"run", [&] { backend.run(Shell{"true"}); }},
      {"read_bytes", [&] { backend.read_bytes("/workspace/f"); }},
      {"write_bytes text", [&] { backend.write_bytes("/workspace/f", "y"); }},
      {"write_bytes binary", [&] { backend.write_bytes("/workspace/f", std::string(1, '\xff')); }},
      {"stat", [&] { backend.stat("/workspace/f"); }},
      {"list_dir", [&] { backend.list_dir("/workspace"); }},
      {"exists", [&] { backend.exists("/workspace/f"); }},
      {"make_dir", [&] { backend.make_dir("/workspace/d"); }},
      {"remove", [&] { backend.remove("/workspace/f"); }},
      {"realpath", [&] { backend.realpath("/workspace/f"); }},
  };
  for (const auto& [name, operation] : operations) {
    try {
      operation();
      ADD_FAILURE() << name << ": no error";
    } catch (const api::ApiError& e) {
      ADD_FAILURE() << name << ": the client's error escaped: " << e.what();
    } catch (const WorkspaceUnavailableError& e) {
      EXPECT_NE(std::string(e.what()).find("is paused"), std::string::npos) << name << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << ": not WorkspaceUnavailableError: " << e.what();
    }
  }
  client.resume_sandbox(backend.ref()->id);
  EXPECT_EQ(backend.run(Shell{"cat f"}).out, "x");
}

// The round-trip cost of each operation, read from the journal.
TEST_F(LizardBackendTest, RequestCountsPerOperation) {
  LizardSandboxBackend backend(options());
  const auto cost = [&](const std::function<void()>& op) {
    server_.clear_journal();
    op();
    return journal().size();
  };
  EXPECT_EQ(cost([&] { backend.write_bytes("/workspace/a/f", "x"); }), 3u);  // projects + create
  EXPECT_EQ(cost([&] { backend.run(Shell{"ln -s a/f link; ln -s a dirlink"}); }), 1u);
  EXPECT_EQ(cost([&] { backend.write_bytes("/workspace/a/f", "y"); }), 1u);
  EXPECT_EQ(cost([&] { backend.read_bytes("/workspace/a/f"); }), 1u);
  EXPECT_EQ(cost([&] { backend.stat("/workspace/a/f"); }), 1u);
  EXPECT_EQ(cost([&] { backend.exists("/workspace/a/f"); }), 1u);
  EXPECT_EQ(cost([&] { backend.exists("/workspace/absent"); }), 1u);
  EXPECT_EQ(cost([&] { backend.list_dir("/workspace/a"); }), 1u);
  EXPECT_EQ(cost([&] { backend.stat("/workspace/link"); }), 2u);      // + one probe
  EXPECT_EQ(cost([&] { backend.list_dir("/workspace"); }), 2u);       // + one probe for all links
  EXPECT_EQ(cost([&] { backend.make_dir("/workspace/b/c"); }), 1u);   // one helper exec
  EXPECT_EQ(cost([&] { backend.realpath("/workspace/link"); }), 1u);  // one helper exec
  EXPECT_EQ(cost([&] { backend.remove("/workspace/b"); }), 1u);
  EXPECT_EQ(cost([&] { backend.run(Shell{"printf small"}); }), 1u);
  auto attached = LizardSandbox(options()).attach(*backend.ref());
  EXPECT_EQ(cost([&] { attached->read_bytes("/workspace/a/f"); }), 2u);  // GET sandbox + read
}

}  // namespace
}  // namespace lizard::workspace
