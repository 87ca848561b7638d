// lizard::api::Client without a socket, through a scripted transport: what
// each route sends (method, URL, headers, body, deadline, connection), how
// each answer is decoded, and answers a real server should never give
// (malformed JSON, the wrong content, a stream cut short).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "lizard/api/client.h"
#include "lizard/testing/matchers.h"
#include "scripted_transport.h"

namespace lizard::api {
namespace {

using namespace std::chrono_literals;
using lizard::testing::ThrowsNonTransientError;
using lizard::testing::ThrowsTransient;
using lizard::testing::ThrowsWorkspaceError;
using scripted::ScriptedTransport;
using scripted::SentRequest;
using workspace::WorkspaceError;
using workspace::WorkspaceTransientError;

constexpr const char* kKey = "liz_scripted_key_42";
constexpr const char* kBase = "https://scripted.test";

class ScriptedClientTest : public ::testing::Test {
 protected:
  std::shared_ptr<ScriptedTransport> transport_ = std::make_shared<ScriptedTransport>();
  Client client_{{.api_key = kKey,
                  .api_url = std::string(kBase) + "/",  // the trailing slash is dropped
                  .request_timeout = 7s,
                  .transport = transport_}};

  void TearDown() override { EXPECT_EQ(transport_->unused(), 0u) << "answers left unused"; }

  // Every route sends the key in its header, and JSON's Content-Type with a body.
  static void expect_headers(const SentRequest& sent, const std::string& accept) {
    EXPECT_EQ(sent.header("X-API-Key"), kKey) << sent.url;
    EXPECT_EQ(sent.header("Accept"), accept) << sent.url;
    if (sent.body.empty()) {
      EXPECT_EQ(sent.header("Content-Type"), std::nullopt) << sent.url;
    } else {
      EXPECT_EQ(sent.header("Content-Type"), "application/json") << sent.url;
    }
    EXPECT_EQ(sent.url.find(kKey), std::string::npos);
    EXPECT_EQ(sent.body.find(kKey), std::string::npos);
  }

  void expect_request(const std::string& method, const std::string& path,
                      const std::string& body = {}) {
    const SentRequest sent = transport_->last();
    EXPECT_EQ(sent.method, method);
    EXPECT_EQ(sent.url, kBase + path);
    EXPECT_EQ(sent.body, body) << path;
    expect_headers(sent, "application/json");
  }
};

// --- what goes out --------------------------------------------------------------
// The key travels in a header, so only over HTTP: another scheme (a typo,
// "file://", "ftp://") is refused when the client is made.
TEST(ClientOptionsTest, TheApiUrlMustBeHttpOrHttps) {
  for (const char* url : {"", "ftp://api.lizard.build", "file:///etc", "api.lizard.build",
                          "htps://api.lizard.build"}) {
    EXPECT_THROW(Client({.api_key = kKey, .api_url = url}), std::invalid_argument) << url;
  }
  for (const char* url : {"https://api.lizard.build", "HTTP://127.0.0.1:8080/"}) {
    EXPECT_NO_THROW(Client({.api_key = kKey, .api_url = url})) << url;
  }
}

TEST_F(ScriptedClientTest, CreateSendsEveryGivenFieldOnAFreshConnection) {
  transport_->answer(201, R"({"sandboxId":"sbx_1","template":"base","status":"running",)"
                          R"("region":"eu","size":"small","projectId":"prj","startedAt":"t0",)"
                          R"("endAt":"t1","metadata":{"k":"v","n":1}})");
  const auto info = client_.create_sandbox({.template_name = "base",
                                            .project_id = "prj",
                                            .timeout_ms = 60000,
                                            .size = "small",
                                            .region = "eu",
                                            .envs = {{"A", "1"}},
                                            .metadata = {{"m", "v"}},
                                            .volume_id = "vol_1",
                                            .volume_name = "data"});
  expect_request("POST", "/api/sandboxes",
                 R"({"template":"base","projectId":"prj","timeoutMs":60000,"size":"small",)"
                 R"("region":"eu","envs":{"A":"1"},"metadata":{"m":"v"},"volumeId":"vol_1",)"
                 R"("volumeName":"data"})");
  EXPECT_TRUE(transport_->last().fresh_connection);
  EXPECT_EQ(transport_->last().timeout, 7s);
  EXPECT_EQ(transport_->last().max_answer_bytes, kMaxJsonAnswerBytes);
  EXPECT_EQ(info.sandbox_id, "sbx_1");
  EXPECT_EQ(info.status, "running");
  EXPECT_EQ(info.region, "eu");
  EXPECT_EQ(info.size, "small");
  EXPECT_EQ(info.project_id, "prj");
  EXPECT_EQ(info.started_at, "t0");
  EXPECT_EQ(info.end_at, "t1");
  EXPECT_EQ(info.metadata, (std::map<std::string, std::string>{{"k", "v"}}));
}

TEST_F(ScriptedClientTest, CreateOmitsWhatIsNotGiven) {
  transport_->answer(200, R"({"id":"sbx_2"})");
  EXPECT_EQ(client_.create_sandbox({.project_id = "prj"}).sandbox_id, "sbx_2");
  expect_request("POST", "/api/sandboxes", R"({"template":"base","projectId":"prj"})");
}

TEST_F(ScriptedClientTest, ExecSendsTheCommandAndTheCallsDeadline) {
  transport_->answer(200, R"({"stdout":"o","stderr":"e","exitCode":3,"truncated":true})");
  std::stop_source stop;
  const auto result = client_.exec("sbx/1",
                                   {.cmd = std::vector<std::string>{"echo", "a\"b"},
                                    .envs = {{"K", "v"}},
                                    .workdir = "/w",
                                    .user = "root",
                                    .timeout_ms = 5000,
                                    .pid_event = true},
                                   {.timeout = 90s, .stop = stop.get_token()});
  expect_request("POST", "/api/sandboxes/sbx%2F1/exec",
                 R"({"cmd":["echo","a\"b"],"envs":{"K":"v"},"workdir":"/w","user":"root",)"
                 R"("timeoutMs":5000,"pidEvent":true})");
  EXPECT_EQ(transport_->last().timeout, 90s);
  EXPECT_TRUE(transport_->last().stoppable);
  EXPECT_FALSE(transport_->last().fresh_connection);
  EXPECT_EQ(result.out, "o");
  EXPECT_EQ(result.err, "e");
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_TRUE(result.truncated);
  EXPECT_FALSE(result.timed_out);

  transport_->answer(200, R"({"exitCode":0,"timedOut":true})");
  EXPECT_TRUE(client_.exec("sbx_1", {.cmd = std::string("sleep 9")}).timed_out);
  expect_request("POST", "/api/sandboxes/sbx_1/exec", R"({"cmd":"sleep 9"})");
  EXPECT_FALSE(transport_->last().stoppable);
}

TEST_F(ScriptedClientTest, FileRoutes) {
  transport_->answer(200, "{}").answer(200, "{}").answer(200, "{}");
  client_.write_file("sbx_1", "/w/a b", "hi");
  expect_request("POST", "/api/sandboxes/sbx_1/files",
                 R"({"path":"/w/a b","content":"aGk=","encoding":"base64"})");
  client_.write_base64_text_file("sbx_1", "/w/t.b64", "hi");
  expect_request("POST", "/api/sandboxes/sbx_1/files", R"({"path":"/w/t.b64","content":"aGk="})");
  client_.write_text_file("sbx_1", "/w/t", "line\n\"q\"");
  expect_request("POST", "/api/sandboxes/sbx_1/files",
                 R"({"path":"/w/t","content":"line\n\"q\""})");

  transport_->answer(200, std::string("raw\0bytes", 9));
  EXPECT_EQ(client_.read_file("sbx_1", "/w/a b&c=ü"), std::string("raw\0bytes", 9));
  const SentRequest read = transport_->last();
  EXPECT_EQ(read.method, "GET");
  EXPECT_EQ(read.url,
            std::string(kBase) + "/api/sandboxes/sbx_1/files?path=%2Fw%2Fa%20b%26c%3D%C3%BC");
  expect_headers(read, "*/*");
  EXPECT_EQ(read.max_answer_bytes, kMaxFileReadBytes);
  transport_->answer(200, "x");
  client_.read_file("sbx_1", "/f", {.max_answer_bytes = 10});
  EXPECT_EQ(transport_->last().max_answer_bytes, 10u);

  transport_->answer(200, "{}").answer(200, "{}");
  client_.remove_file("sbx_1", "/w/gone");
  expect_request("DELETE", "/api/sandboxes/sbx_1/files", R"({"path":"/w/gone"})");
  EXPECT_TRUE(transport_->last().fresh_connection);
  client_.move_file("sbx_1", "/w/a", "/w/b");
  expect_request("POST", "/api/sandboxes/sbx_1/files/move", R"({"from":"/w/a","to":"/w/b"})");
  EXPECT_TRUE(transport_->last().fresh_connection);
}

// A text upload is escaped by hand in one buffer (wire_codec.cc): every byte
// value, in runs and alone, at the start and the end, comes out as RapidJSON's
// writer writes it, and a JSON parser reads back the same bytes.
TEST_F(ScriptedClientTest, TextUploadsAreEscapedAsAJsonWriterEscapesThem) {
  std::string every_byte;
  for (int c = 0; c < 256; ++c) every_byte += static_cast<char>(c);
  const std::vector<std::string> texts = {
      "",
      "\"",
      "plain",
      "\\",
      std::string(1, '\0'),
      every_byte,
      every_byte + every_byte,
      "\x1f\x7f\\\"gr\xC3\xBC\xC3\x9F \xF0\x9F\xA6\x8E\tend\n",
      std::string(70000, 'x') + "\n" + std::string(70000, '"'),
  };
  for (const std::string& text : texts) {
    transport_->answer(200, "{}");
    client_.write_text_file("sbx_1", "/w/\"t\"", text);
    rapidjson::StringBuffer want;
    rapidjson::Writer<rapidjson::StringBuffer> writer(want);
    writer.StartObject();
    writer.Key("path");
    writer.String("/w/\"t\"");
    writer.Key("content");
    writer.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
    writer.EndObject();
    const std::string sent = transport_->last().body;
    EXPECT_EQ(sent, std::string(want.GetString(), want.GetSize())) << text.size() << " bytes";
    rapidjson::Document back;
    back.Parse(sent.data(), sent.size());
    ASSERT_FALSE(back.HasParseError()) << text.size() << " bytes";
    EXPECT_EQ(std::string(back["content"].GetString(), back["content"].GetStringLength()), text);
  }
}

TEST_F(ScriptedClientTest, SandboxRoutes) {
  transport_->answer(200, R"({"sandboxId":"sbx_1"})");
  EXPECT_EQ(client_.get_sandbox("sbx_1").sandbox_id, "sbx_1");
  expect_request("GET", "/api/sandboxes/sbx_1");
  transport_->answer(200, R"([{"sandboxId":"a"},{"id":"b"},7])");
  const auto listed = client_.list_sandboxes("prj 1");
  expect_request("GET", "/api/projects/prj%201/sandboxes");
  ASSERT_EQ(listed.size(), 3u);
  EXPECT_EQ(listed[1].sandbox_id, "b");
  EXPECT_EQ(listed[2].sandbox_id, "");  // not an object: empty, not an error
  // A small answer that would decode into gigabytes (a million entries of
  // about a hundred bytes each, from two bytes each) is refused.
  std::string zeros = "[0";
  for (int i = 0; i < 1'000'000; ++i) zeros += ",0";
  transport_->answer(200, zeros + "]");
  EXPECT_THROW(client_.list_sandboxes(), WorkspaceError);
  transport_->last();
  transport_->answer(200, "[]");
  EXPECT_TRUE(client_.list_sandboxes().empty());
  expect_request("GET", "/api/sandboxes");

  transport_->answer(200, "{}").answer(404, R"({"error":"gone"})").answer(500, "boom");
  EXPECT_TRUE(client_.kill_sandbox("sbx_1"));
  expect_request("DELETE", "/api/sandboxes/sbx_1");
  EXPECT_FALSE(client_.kill_sandbox("sbx_1"));
  EXPECT_THROW(client_.kill_sandbox("sbx_1"), WorkspaceTransientError);

  transport_->answer(200, "{}").answer(200, "{}").answer(200, "{}");
  client_.set_sandbox_timeout("sbx_1", 120000);
  expect_request("POST", "/api/sandboxes/sbx_1/timeout", R"({"timeoutMs":120000})");
  client_.pause_sandbox("sbx_1");
  expect_request("POST", "/api/sandboxes/sbx_1/pause");
  client_.resume_sandbox("sbx_1");
  expect_request("POST", "/api/sandboxes/sbx_1/resume");
}

TEST_F(ScriptedClientTest, ProcessRoutes) {
  transport_->answer(200, R"([{"pid":7,"cmd":["sleep",5,"60"],"startedAt":"t"},{"pid":8}])");
  const auto processes = client_.list_processes("sbx_1");
  expect_request("GET", "/api/sandboxes/sbx_1/processes");
  ASSERT_EQ(processes.size(), 2u);
  EXPECT_EQ(processes[0].pid, 7);
  EXPECT_EQ(processes[0].cmd, (std::vector<std::string>{"sleep", "60"}));
  EXPECT_EQ(processes[0].started_at, "t");
  EXPECT_EQ(processes[1].pid, 8);
  transport_->answer(200, "{}");
  client_.signal_process("sbx_1", 7, "SIGTERM");
  expect_request("POST", "/api/sandboxes/sbx_1/processes/signal",
                 R"({"pid":7,"signal":"SIGTERM"})");
}

TEST_F(ScriptedClientTest, FileInfoAnswers) {
  transport_->answer(200, R"([{"name":"a","path":"/w/a","type":"file","size":5,"mode":420,)"
                          R"("permissions":"-rw-r--r--","modTime":1700000000000},)"
                          R"({"name":"l","type":"symlink","symlinkTarget":"a"}])");
  const auto files = client_.list_files("sbx_1", "/w");
  EXPECT_EQ(transport_->last().url,
            std::string(kBase) + "/api/sandboxes/sbx_1/files/list?path=%2Fw");
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].size, 5u);
  EXPECT_EQ(files[0].mode, 420u);
  EXPECT_EQ(files[0].permissions, "-rw-r--r--");
  EXPECT_EQ(files[0].mod_time_ms, 1700000000000);
  EXPECT_EQ(files[0].symlink_target, std::nullopt);
  EXPECT_EQ(files[1].symlink_target, "a");
  transport_->answer(200, R"({"name":"d","type":"dir","size":4096})");
  EXPECT_EQ(client_.stat_file("sbx_1", "/w/d").type, "dir");
  EXPECT_EQ(transport_->last().url,
            std::string(kBase) + "/api/sandboxes/sbx_1/files/stat?path=%2Fw%2Fd");
}

TEST_F(ScriptedClientTest, VolumeRoutes) {
  transport_->answer(201, R"({"id":"vol_1","projectId":"prj","name":"v","sizeGb":1.5,)"
                          R"("region":"eu","status":"ready","attachedTo":"sbx_1"})");
  const auto volume = client_.create_volume(
      "prj", {.name = "v", .size_gb = 1.5, .region = "eu", .get_or_create = true});
  expect_request("POST", "/api/projects/prj/volumes",
                 R"({"name":"v","sizeGb":1.5,"region":"eu","getOrCreate":true})");
  EXPECT_EQ(volume.id, "vol_1");
  EXPECT_EQ(volume.size_gb, 1.5);
  EXPECT_EQ(volume.status, "ready");
  EXPECT_EQ(volume.attached_to, "sbx_1");
  transport_->answer(200, R"([{"id":"vol_1"},{"id":"vol_2"}])");
  EXPECT_EQ(client_.list_volumes("prj").size(), 2u);
  expect_request("GET", "/api/projects/prj/volumes");
  transport_->answer(200, R"({"id":"vol_1"})").answer(200, "{}");
  EXPECT_EQ(client_.get_volume("prj", "my vol").id, "vol_1");
  expect_request("GET", "/api/projects/prj/volumes/my%20vol");
  client_.delete_volume("prj", "vol_1");
  expect_request("DELETE", "/api/projects/prj/volumes/vol_1");
}

TEST_F(ScriptedClientTest, ProjectsResolveByIdSlugOrNameOnceEach) {
  const std::string projects =
      R"([{"id":"prj_a","name":"Alpha Scripted","slug":"alpha-scripted","workspaceId":"w"},)"
      R"({"id":"prj_b","name":"Twin","slug":"twin-1"},{"id":"prj_c","name":"Twin","slug":"twin-2"}])";
  transport_->answer(200, projects);
  EXPECT_EQ(client_.resolve_project("ALPHA-SCRIPTED"), "prj_a");
  expect_request("GET", "/api/projects");
  EXPECT_EQ(client_.resolve_project("ALPHA-SCRIPTED"), "prj_a");  // cached: nothing sent
  EXPECT_EQ(transport_->sent().size(), 1u);
  transport_->answer(200, projects).answer(200, projects);
  try {
    client_.resolve_project("twin");
    ADD_FAILURE() << "an ambiguous name resolved";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.code(), "PROJECT_AMBIGUOUS");
  }
  EXPECT_THROW(client_.resolve_project("no-such-scripted-project"), NotFoundError);
  EXPECT_THROW(client_.resolve_project(""), std::invalid_argument);
}

// --- the raw exchange and the log -------------------------------------------------

TEST_F(ScriptedClientTest, RawRequestReturnsEveryStatusAsAValue) {
  transport_->answer(404, "nope", {{"x-trace", "1"}});
  const auto response = client_.request("GET", "/api/anything", "a=1", "", {}, "text/plain");
  EXPECT_EQ(response.status, 404);
  EXPECT_EQ(response.body, "nope");
  EXPECT_EQ(response.headers.at("x-trace"), "1");
  EXPECT_EQ(transport_->last().url, std::string(kBase) + "/api/anything?a=1");
  expect_headers(transport_->last(), "text/plain");
  transport_->fail(TransportFailure::kCouldNotConnect, false);
  EXPECT_THROW(client_.request("GET", "/api/anything", "", ""), WorkspaceTransientError);
}

TEST(ScriptedClientLogTest, OneRedactedLinePerRequest) {
  auto transport = std::make_shared<ScriptedTransport>();
  std::vector<std::string> lines;
  Client client({.api_key = kKey,
                 .api_url = kBase,
                 .log = [&](std::string_view line) { lines.emplace_back(line); },
                 .transport = transport});
  transport->answer(200, R"({"id":"sbx_1"})")
      .fail(TransportFailure::kConnectionFailed, true, std::string("reset; X-API-Key: ") + kKey);
  client.get_sandbox("sbx_1");
  EXPECT_THROW(client.get_sandbox("sbx_1"), WorkspaceTransientError);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("GET /api/sandboxes/sbx_1 -> 200 ", 0), 0u) << lines[0];
  for (const auto& line : lines) EXPECT_EQ(line.find(kKey), std::string::npos) << line;
}

// --- the streaming exec ---------------------------------------------------------

TEST_F(ScriptedClientTest, StreamedEventsArriveInOrderWhateverTheChunking) {
  transport_->answer(200,
                     ": hello\n\ndata: {\"pid\":42}\n\n"
                     "data: {\"stream\":\"stdout\",\"line\":\"out\"}\n\n"
                     "data: {\"stream\":\"stderr\",\"line\":\"err\"}\r\n\r\n"
                     "event: exit\ndata: {\"exitCode\":5}\n\n");
  std::vector<std::string> seen;
  const int code = client_.exec_stream("sbx_1", {.cmd = std::string("x"), .pid_event = true},
                                       [&](const ExecEvent& e) {
                                         switch (e.kind) {
                                           case ExecEvent::Kind::kPid:
                                             seen.push_back("pid " + std::to_string(e.number));
                                             break;
                                           case ExecEvent::Kind::kStdout:
                                             seen.push_back("out " + e.line);
                                             break;
                                           case ExecEvent::Kind::kStderr:
                                             seen.push_back("err " + e.line);
                                             break;
                                           case ExecEvent::Kind::kExit:
                                             seen.push_back("exit " + std::to_string(e.number));
                                             break;
                                           case ExecEvent::Kind::kError:
                                             seen.push_back("error " + e.line);
                                             break;
                                         }
                                       });
  EXPECT_EQ(code, 5);
  EXPECT_EQ(seen, (std::vector<std::string>{"pid 42", "out out", "err err", "exit 5"}));
  const SentRequest sent = transport_->last();
  EXPECT_TRUE(sent.streaming);
  EXPECT_EQ(sent.body, R"({"cmd":"x","pidEvent":true})");
  expect_headers(sent, "text/event-stream");
}

TEST_F(ScriptedClientTest, AStreamCutShortOrReportingAnErrorFails) {
  const auto stream = [&](std::string body) {
    transport_->answer(200, std::move(body));
    return client_.exec_stream("sbx_1", {.cmd = std::string("x")}, [](const ExecEvent&) {});
  };
  const auto expect_failure = [&](std::string body, const std::string& words) {
    try {
      stream(std::move(body));
      ADD_FAILURE() << "no error for: " << words;
    } catch (const WorkspaceError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find(kKey), std::string::npos) << e.what();
    }
  };
  expect_failure("data: {\"stream\":\"stdout\",\"line\":\"a\"}\n\n", "without an exit event");
  expect_failure("event: exit\ndata: {\"exitCode\":1", "without an exit event");  // cut mid-event
  expect_failure(std::string("event: error\ndata: key ") + kKey + "\n\n", "reported an error");
  expect_failure("data: {\"exitCode\":1e20}\n\n", "malformed \"exitCode\"");
  expect_failure("data: {\"pid\":-1e30}\n\nevent: exit\ndata: {\"exitCode\":0}\n\n",
                 "malformed \"pid\"");
  EXPECT_EQ(stream("data: not json\n\nevent: exit\ndata: {\"exitCode\":0}\n\n"), 0);
}

TEST_F(ScriptedClientTest, AStreamCallbackThatThrowsIsRethrownAfterTheExchange) {
  transport_->answer(200, "data: {\"pid\":1}\n\nevent: exit\ndata: {\"exitCode\":0}\n\n");
  int calls = 0;
  EXPECT_THROW(client_.exec_stream("sbx_1", {.cmd = std::string("x"), .pid_event = true},
                                   [&](const ExecEvent&) {
                                     ++calls;
                                     throw std::runtime_error("caller's own");
                                   }),
               std::runtime_error);
  EXPECT_EQ(calls, 1) << "no event after the callback failed";
}

TEST_F(ScriptedClientTest, AStreamRefusedIsMappedAndCallsNoCallback) {
  transport_->answer(429, R"({"error":"slow down","retryAfterS":3})");
  bool called = false;
  try {
    client_.exec_stream("sbx_1", {.cmd = std::string("x")},
                        [&](const ExecEvent&) { called = true; });
    ADD_FAILURE() << "no error";
  } catch (const WorkspaceTransientError& e) {
    EXPECT_EQ(e.retry_after(), 3s);
  }
  EXPECT_FALSE(called);
}

// --- answers a server should never give ------------------------------------------

TEST_F(ScriptedClientTest, MalformedJsonOnEveryDecodingRouteIsAWorkspaceError) {
  const std::vector<std::pair<std::string, std::function<void()>>> routes = {
      {"list_projects", [&] { client_.list_projects(); }},
      {"create_sandbox", [&] { client_.create_sandbox({.project_id = "p"}); }},
      {"get_sandbox", [&] { client_.get_sandbox("s"); }},
      {"list_sandboxes", [&] { client_.list_sandboxes(); }},
      {"exec", [&] { client_.exec("s", {.cmd = std::string("x")}); }},
      {"list_processes", [&] { client_.list_processes("s"); }},
      {"list_files", [&] { client_.list_files("s", "/"); }},
      {"stat_file", [&] { client_.stat_file("s", "/"); }},
      {"create_volume", [&] { client_.create_volume("p", {.name = "v"}); }},
      {"list_volumes", [&] { client_.list_volumes("p"); }},
      {"get_volume", [&] { client_.get_volume("p", "v"); }},
  };
  for (const std::string body : {R"({"sandboxId":)", "<html><body>502 Bad Gateway</body></html>"}) {
    for (const auto& [name, route] : routes) {
      transport_->answer(200, body);
      EXPECT_THAT(route, ThrowsNonTransientError("malformed JSON")) << name << ": " << body;
    }
  }
}

// A hostile server's deeply nested answer: RapidJSON's default parser
// recursed once per level and 300 KB of "[" overflowed the client's stack.
TEST_F(ScriptedClientTest, DeeplyNestedAnswersAreAWorkspaceErrorNotACrash) {
  const std::string open_only(300 * 1024, '[');
  const std::string closed = std::string(65, '[') + std::string(65, ']');
  for (const std::string& body : {open_only, closed}) {
    transport_->answer(200, body);
    EXPECT_THAT([&] { client_.list_sandboxes(); },
                ThrowsNonTransientError("nested deeper than 64"));
    transport_->answer(200, "{\"sandboxId\":" + body + "}");
    EXPECT_THAT([&] { client_.get_sandbox("s"); },
                ThrowsNonTransientError("nested deeper than 64"));
    // An error answer's body is read for its message and retry advice.
    transport_->answer(503, body);
    EXPECT_THROW(client_.get_sandbox("s"), WorkspaceError);
    transport_->answer(400, body);
    EXPECT_THROW(client_.get_sandbox("s"), WorkspaceError);
  }
  // 64 levels are still JSON (of the wrong shape: decoded as absent).
  transport_->answer(200, std::string(64, '[') + std::string(64, ']'));
  EXPECT_NO_THROW(client_.list_sandboxes());
}

// An ID a hostile listing (or a caller) gives that would make the URL name
// another route: "/api/sandboxes/.." is "/api/" once curl folds it, and
// "/api/sandboxes/" the list. Refused before any request; "..." and "a.b"
// are IDs like any other.
TEST_F(ScriptedClientTest, IdsThatWouldNameAnotherRouteAreRefusedBeforeAnyRequest) {
  for (const std::string id : {"", ".", ".."}) {
    EXPECT_THROW(client_.get_sandbox(id), std::invalid_argument) << id;
    EXPECT_THROW(client_.kill_sandbox(id), std::invalid_argument) << id;
    EXPECT_THROW(client_.read_file(id, "/root/.lizard/tags"), std::invalid_argument) << id;
    EXPECT_THROW(client_.list_sandboxes(id), std::invalid_argument) << id;
  }
  EXPECT_TRUE(transport_->sent().empty());
  transport_->answer(404, R"({"error":"not found"})");
  EXPECT_FALSE(client_.kill_sandbox("..."));
  expect_request("DELETE", "/api/sandboxes/...");
}

// A listing answered as an object (a paginated envelope, an error body with
// 200) or a scalar is not an empty listing: list_dir would say "empty" and
// lizard-sweep "no sandboxes".
TEST_F(ScriptedClientTest, AListingThatIsNotAJsonArrayIsAnErrorNotAnEmptyList) {
  const std::vector<std::pair<std::string, std::function<std::size_t()>>> routes = {
      {"list_projects", [&] { return client_.list_projects().size(); }},
      {"list_sandboxes", [&] { return client_.list_sandboxes().size(); }},
      {"list_processes", [&] { return client_.list_processes("s").size(); }},
      {"list_files", [&] { return client_.list_files("s", "/").size(); }},
      {"list_volumes", [&] { return client_.list_volumes("p").size(); }},
  };
  for (const std::string body : {R"({"sandboxes":[{"sandboxId":"s"}],"nextCursor":"c"})",
                                 R"({"error":"busy"})", "{}", "null", "\"[]\"", "0"}) {
    for (const auto& route : routes) {
      transport_->answer(200, body);
      EXPECT_THAT([&] { route.second(); }, ThrowsNonTransientError("something other than a list"))
          << route.first << ": " << body;
    }
  }
  for (const auto& [name, route] : routes) {
    transport_->answer(200, "[]");
    EXPECT_EQ(route(), 0u) << name;
  }
}

TEST_F(ScriptedClientTest, WellFormedAnswersOfTheWrongShape) {
  transport_->answer(200, "{}");
  EXPECT_THAT([&] { client_.create_sandbox({.project_id = "p"}); },
              ThrowsWorkspaceError("names no sandbox"));
  transport_->answer(200, "[]");
  EXPECT_THROW(client_.exec("s", {.cmd = std::string("x")}), WorkspaceError);  // no exitCode
  transport_->answer(200, R"({"exitCode":4294967296})");
  EXPECT_THROW(client_.exec("s", {.cmd = std::string("x")}), WorkspaceError);  // out of range
  transport_->answer(200, R"({"name":"f","size":-1})");
  EXPECT_THROW(client_.stat_file("s", "/f"), WorkspaceError);
  transport_->answer(200, R"({"name":"f","mode":1e300})");
  EXPECT_THROW(client_.stat_file("s", "/f"), WorkspaceError);
  transport_->answer(200, R"([{"pid":1.5e19}])");
  EXPECT_THROW(client_.list_processes("s"), WorkspaceError);
  // Lists answered with an object: an error, not an empty list (every era
  // answers a JSON array; AListingThatIsNotAJsonArrayIsAnErrorNotAnEmptyList).
  transport_->answer(200, R"({"items":[]})").answer(200, R"({"items":[]})");
  EXPECT_THROW(client_.list_files("s", "/"), WorkspaceError);
  EXPECT_THROW(client_.list_volumes("p"), WorkspaceError);
  transport_->answer(200, R"({"name":7,"size":3.9,"type":null})");
  const auto odd = client_.stat_file("s", "/f");
  EXPECT_EQ(odd.name, "");
  EXPECT_EQ(odd.size, 3u);
  EXPECT_EQ(odd.type, "");
}

TEST_F(ScriptedClientTest, AServerThatHangsUpIsTransientAndSaysWhetherItCouldHaveActed) {
  transport_->fail(TransportFailure::kConnectionFailed, true, "Empty reply from server");
  try {
    client_.exec("s", {.cmd = std::string("x")});
    ADD_FAILURE() << "no error";
  } catch (const WorkspaceTransientError& e) {
    EXPECT_TRUE(e.may_have_been_admitted());
    EXPECT_NE(std::string(e.what()).find("Empty reply from server"), std::string::npos);
  }
  transport_->fail(TransportFailure::kConnectionFailed, false, "Connection reset");
  EXPECT_THAT([&] { client_.create_sandbox({.project_id = "p"}); }, ThrowsTransient(false));
  transport_->fail(TransportFailure::kAnswerTooLarge, true);
  EXPECT_THAT([&] { client_.get_sandbox("s"); }, ThrowsNonTransientError("larger than 4096 bytes"));
}

TEST_F(ScriptedClientTest, AnHtmlErrorPageBecomesABoundedMessage) {
  transport_->answer(502, "<html>" + std::string(100000, 'x') + "</html>");
  try {
    client_.get_sandbox("s");
    ADD_FAILURE() << "no error";
  } catch (const WorkspaceTransientError& e) {
    EXPECT_EQ(e.http_status(), 502);
    EXPECT_LT(std::string(e.what()).size(), 1000u);
    EXPECT_NE(std::string(e.what()).find("<html>xxx"), std::string::npos);
  }
}

}  // namespace
}  // namespace lizard::api
