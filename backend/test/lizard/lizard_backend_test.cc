// LizardSandboxBackend's lifecycle against the embedded mock.
//
// The conformance suite runs every env.* and lizard.* rule on this backend
// and this mock (ctests conformance_lizard, conformance_lizard_firecracker);
// this file checks what those rules do not: the ref before and after first
// use, create-body fields the rules ignore (the project, metadata, an
// omitted envs, the default size), sizes refused by the constructor with
// nothing sent, a file operation on an unknown ref, what a second destroy
// sends, stat and exists after destroy, the exact type of a rejected key's
// error, that the log sink hears requests, that an admitted create is not
// retried by the next operation, a paused sandbox, and the number of
// requests each operation costs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lizard/api/client.h"
#include "lizard/mock/mock_server.h"
#include "lizard_backend_test.h"

namespace lizard::workspace {
namespace {

using namespace lizard_test;
using ::testing::HasSubstr;

// The body of the first create in `journal` ("" when there is none).
std::string create_body(const std::vector<mock::JournalEntry>& journal) {
  const auto create = std::find_if(journal.begin(), journal.end(), is_create);
  return create == journal.end() ? std::string() : create->body;
}

// --- lifecycle ----------------------------------------------------------------

// env.ref-stable allows a ref known before first use; this backend has none
// until the create, then names the mock's sandbox.
TEST_F(LizardBackendTest, TheRefIsEmptyUntilTheSandboxExists) {
  auto backend = make_backend();
  EXPECT_FALSE(backend->ref().has_value());
  backend->run(Shell{"true"});
  const auto ref = backend->ref();
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->provider, "lizard");
  EXPECT_FALSE(server_.workspace_dir(ref->id).empty()) << "the ref names no sandbox: " << ref->id;
}

// lizard.create-body accepts the refusal at first use and counts creates;
// this backend refuses in its constructor and sends nothing at all.
TEST_F(LizardBackendTest, InvalidSizeIsRejectedBeforeAnyRequest) {
  for (const char* size : {"tiny", "", "Medium", "xl"}) {
    auto o = options();
    o.size = size;
    EXPECT_THAT([&] { (void)make_backend(o); }, ThrowsInvalidArgument()) << size;
  }
  EXPECT_TRUE(journal().empty());
}

// The backend's env reaches every command and the create: checked as a
// call's env is (a name with '=' would reach the command as another name).
TEST_F(LizardBackendTest, InvalidBackendEnvIsRejectedBeforeAnyRequest) {
  const std::vector<std::map<std::string, std::string>> bad = {{{"A=B", "c"}},
                                                               {{"", "v"}},
                                                               {{std::string("N\0X", 3), "v"}},
                                                               {{"V", std::string("a\0b", 3)}}};
  for (const auto& env : bad) {
    auto o = options();
    o.env = env;
    EXPECT_THAT([&] { (void)make_backend(o); }, ThrowsInvalidArgument()) << env.begin()->first;
  }
  EXPECT_TRUE(journal().empty());
}

// lizard.create-body checks template, size, lifetime and envs, not these.
TEST_F(LizardBackendTest, CreateBodyCarriesTheProjectAndMetadata) {
  auto o = options();
  o.metadata = {{"owner", "test"}};
  make_backend(o)->run(Shell{"true"});
  rapidjson::Document body;
  body.Parse(create_body(journal()).c_str());
  ASSERT_TRUE(body.IsObject());
  ASSERT_TRUE(body.HasMember("projectId") && body["projectId"].IsString());
  EXPECT_EQ(std::string(body["projectId"].GetString()), server_.project_id());
  ASSERT_TRUE(body.HasMember("metadata") && body["metadata"].IsObject());
  ASSERT_TRUE(body["metadata"].HasMember("owner") && body["metadata"]["owner"].IsString());
  EXPECT_STREQ(body["metadata"]["owner"].GetString(), "test");
}

// lizard.create-body accepts "envs": {} and does not check the default size.
TEST_F(LizardBackendTest, CreateBodyOmitsEnvsAndDefaultsToMedium) {
  make_backend()->run(Shell{"true"});
  rapidjson::Document body;
  body.Parse(create_body(journal()).c_str());
  ASSERT_TRUE(body.IsObject());
  EXPECT_FALSE(body.HasMember("envs"));
  ASSERT_TRUE(body.HasMember("size") && body["size"].IsString());
  EXPECT_STREQ(body["size"].GetString(), "medium");
}

// lizard.unknown-ref tries a command; a file operation must not slip through.
TEST_F(LizardBackendTest, AFileOperationOnAnUnknownRefIsUnavailable) {
  auto backend = LizardSandbox(options()).attach({"lizard", "sbx_doesnotexist"});
  EXPECT_THAT([&] { backend->read_bytes("/workspace/x"); }, ThrowsUnavailable());
  EXPECT_EQ(count(is_create), 0u);
  EXPECT_EQ(server_.live_sandboxes(), 0u);
}

// lizard.destroy checks that a delete went out and that a command and a
// read are unavailable after it; not what the second destroy sends, the
// ref afterwards, stat, exists through a new attach, or LizardSandbox's
// destroy of a sandbox already gone.
TEST_F(LizardBackendTest, DestroyTwiceSendsOneDeleteAndKeepsTheRef) {
  auto backend = make_backend();
  backend->run(Shell{"true"});
  const auto ref = *backend->ref();
  backend->destroy();
  backend->destroy();
  EXPECT_EQ(count(is_delete), 1u);
  EXPECT_THAT([&] { backend->stat("/workspace"); }, ThrowsUnavailable());
  EXPECT_EQ(backend->ref(), ref);
  auto again = LizardSandbox(options()).attach(ref);
  EXPECT_THAT([&] { again->exists("/workspace"); }, ThrowsUnavailable());
  EXPECT_NO_THROW(LizardSandbox(options()).destroy(ref));  // already gone: fine
}

// lizard.credentials-rejected accepts any WorkspaceUnavailableError whose
// message reads as authentication; this backend raises the subclass.
TEST_F(LizardBackendTest, ARejectedKeyIsAWorkspaceAuthenticationError) {
  auto o = options();
  o.api_key = "liz_wrong_key";
  auto backend = make_backend(o);
  EXPECT_THAT([&] { backend->run(Shell{"true"}); },
              ::testing::Throws<WorkspaceAuthenticationError>());
}

// lizard.key-stays-on-host scans the log lines, and passes when there are none.
TEST_F(LizardBackendTest, TheLogHearsTheRequestsAndNeverTheKey) {
  std::vector<std::string> log;
  std::mutex log_mutex;
  auto o = options();
  o.log = [&](std::string_view line) {
    std::lock_guard lock(log_mutex);
    log.emplace_back(line);
  };
  auto backend = make_backend(o);
  backend->write_bytes("/workspace/f", "data");
  backend->read_bytes("/workspace/f");
  EXPECT_THAT([&] { backend->read_bytes("/workspace/missing"); }, ThrowsPathError());
  std::lock_guard lock(log_mutex);
  ASSERT_FALSE(log.empty());
  for (const auto& line : log) EXPECT_EQ(line.find(server_.api_key()), std::string::npos) << line;
}

// lizard.transient-errors checks the error and the one create; this, that
// the next operation refuses instead of creating again.
TEST_F(LizardBackendTest, AFailedCreateIsNotRepeated) {
  server_.add_fault(fault::close_after_handling("POST", "/api/sandboxes").times(1));
  auto backend = make_backend();
  EXPECT_THAT([&] { backend->run(Shell{"true"}); }, ThrowsTransient(true));
  EXPECT_THAT([&] { backend->run(Shell{"true"}); }, ThrowsUnavailable());
  EXPECT_EQ(count(is_create), 1u);
}

TEST_F(LizardBackendTest, PauseIsNotSupportedOnTheKubernetesEra) {
  auto backend = make_backend();
  backend->run(Shell{"true"});
  api::Client client({.api_key = server_.api_key(), .api_url = server_.url()});
  EXPECT_THAT([&] { client.pause_sandbox(backend->ref()->id); },
              ::testing::ThrowsMessage<WorkspaceNotSupportedError>(
                  HasSubstr("not supported by this platform")));
}

class LizardPausedTest : public LizardBackendTest {
 protected:
  LizardPausedTest() : LizardBackendTest(lizard::testing::firecracker()) {}
};

// A paused sandbox answers 409 SANDBOX_PAUSED on its exec and files routes:
// every operation raises the contract's WorkspaceUnavailableError (never
// the client's api::ConflictError), and works again once it is resumed.
TEST_F(LizardPausedTest, EveryOperationOnAPausedSandboxIsUnavailable) {
  auto backend = make_backend();
  backend->write_bytes("/workspace/f", "x");
  api::Client client({.api_key = server_.api_key(), .api_url = server_.url()});
  client.pause_sandbox(backend->ref()->id);
  const std::vector<std::pair<std::string, std::function<void()>>> operations = {
      {"run", [&] { backend->run(Shell{"true"}); }},
      {"read_bytes", [&] { backend->read_bytes("/workspace/f"); }},
      {"write_bytes text", [&] { backend->write_bytes("/workspace/f", "y"); }},
      {"write_bytes binary", [&] { backend->write_bytes("/workspace/f", std::string(1, '\xff')); }},
      {"stat", [&] { backend->stat("/workspace/f"); }},
      {"list_dir", [&] { backend->list_dir("/workspace"); }},
      {"exists", [&] { backend->exists("/workspace/f"); }},
      {"make_dir", [&] { backend->make_dir("/workspace/d"); }},
      {"remove", [&] { backend->remove("/workspace/f"); }},
      {"realpath", [&] { backend->realpath("/workspace/f"); }},
  };
  for (const auto& [name, operation] : operations) {
    EXPECT_THAT(operation, ThrowsUnavailable("is paused")) << name;
  }
  client.resume_sandbox(backend->ref()->id);
  EXPECT_EQ(backend->run(Shell{"cat f"}).out, "x");
}

// The round-trip cost of each operation, read from the journal.
TEST_F(LizardBackendTest, RequestCountsPerOperation) {
  auto backend = make_backend();
  const auto cost = [&](const std::function<void()>& op) {
    server_.clear_journal();
    op();
    return journal().size();
  };
  std::string bytes;
  for (int c = 0; c < 256; ++c) bytes.push_back(static_cast<char>(c));
  EXPECT_EQ(cost([&] { backend->write_bytes("/workspace/a/f", "x"); }), 3u);  // projects + create
  EXPECT_EQ(cost([&] { backend->run(Shell{"ln -s a/f link; ln -s a dirlink"}); }), 1u);
  EXPECT_EQ(cost([&] { backend->write_bytes("/workspace/a/f", "y"); }), 1u);
  // Not UTF-8: the base64 as a UTF-8 file, decoded in the sandbox.
  EXPECT_EQ(cost([&] { backend->write_bytes("/workspace/new/parents/all.bin", bytes); }), 2u);
  EXPECT_EQ(cost([&] { EXPECT_EQ(backend->read_bytes("/workspace/new/parents/all.bin"), bytes); }),
            1u);
  EXPECT_EQ(cost([&] { backend->read_bytes("/workspace/a/f"); }), 1u);
  EXPECT_EQ(cost([&] { backend->stat("/workspace/a/f"); }), 1u);
  EXPECT_EQ(cost([&] { backend->exists("/workspace/a/f"); }), 1u);
  EXPECT_EQ(cost([&] { backend->exists("/workspace/absent"); }), 1u);
  EXPECT_EQ(cost([&] { backend->list_dir("/workspace/a"); }), 1u);
  EXPECT_EQ(cost([&] { backend->stat("/workspace/link"); }), 2u);      // + one probe
  EXPECT_EQ(cost([&] { backend->list_dir("/workspace"); }), 2u);       // + one probe for all links
  EXPECT_EQ(cost([&] { backend->make_dir("/workspace/b/c"); }), 1u);   // one helper exec
  EXPECT_EQ(cost([&] { backend->exists("/workspace/b"); }), 1u);       // a directory
  EXPECT_EQ(cost([&] { backend->list_dir("/workspace/b"); }), 1u);     // a subdirectory, no link
  EXPECT_EQ(cost([&] { backend->realpath("/workspace/link"); }), 1u);  // one helper exec
  EXPECT_EQ(cost([&] { backend->remove("/workspace/b"); }), 1u);
  // A command with small output: one exec, whatever its streams and exit.
  EXPECT_EQ(cost([&] {
              EXPECT_EQ(backend->run(Shell{"printf out; printf err >&2; exit 7"}),
                        (CommandResult{7, "out", "err"}));
            }),
            1u);
  auto attached = LizardSandbox(options()).attach(*backend->ref());
  EXPECT_EQ(cost([&] { attached->read_bytes("/workspace/a/f"); }), 2u);  // GET sandbox + read
}

}  // namespace
}  // namespace lizard::workspace
