// The lizard profile rules about traffic (lizard.*): the key, output past the
// server cap, binary files, credentials, transient errors, dropped connections,
// long commands, 501s — seen through the session's PlatformControl.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cctype>
#include <thread>

#include "lizard/workspace/utf8.h"
#include "lizard_support.h"
#include "rule_bodies.h"
#include "rule_context.h"

namespace lizard::conformance::internal {

using workspace::WorkspaceAuthenticationError;
using workspace::WorkspaceError;
using workspace::WorkspaceNotSupportedError;
using workspace::WorkspaceTransientError;
using workspace::WorkspaceUnavailableError;

void lizard_key_stays_on_host(RuleContext& ctx) {
  LIZARD_NEED_PLATFORM(ctx, kPlatformBackends);
  auto& p = platform(ctx);
  const auto secrets = ctx.session().secrets();
  ASSERT_FALSE(secrets.empty()) << "the session names no API key to look for";
  const std::string& key = secrets.front();
  std::vector<std::string> messages;
  BackendOverrides o;
  o.env = {{"LC_PLAIN", "value"}};
  auto b = ctx.adopt(p.make_with(o));
  RunOptions options;
  options.env["LC_CALL"] = "call";
  ctx.run(b, Argv{{"printf", "%s", "argv item"}}, options);
  ctx.run(b, Shell{"env > /dev/null; echo done"});
  if (auto* f = b->filesystem()) {
    const std::string file = b->working_dir() + "/lc-key-" + random_hex(8);
    f->write_bytes(file, "file content");
    f->read_bytes(file);
    f->remove(file);
    messages.push_back(
        describe_throw([&] { f->read_bytes("/workspace/lc-missing-" + random_hex(4)); }));
  }
  RunOptions bad;
  bad.timeout = Seconds(-1);
  messages.push_back(describe_throw([&] { ctx.run(b, Argv{{"true"}}, bad); }));
  BackendOverrides unknown;
  unknown.ref = WorkspaceRef{"lizard", "sbx_" + random_hex(16)};
  auto gone = ctx.adopt(p.make_with(unknown));
  messages.push_back(describe_throw([&] { first_use(ctx, gone); }));
  BackendOverrides wrong;
  wrong.api_key = "liz_wrong_" + random_hex(16);
  auto rejected = ctx.adopt(p.make_with(wrong));
  const std::string wrong_message = describe_throw([&] { first_use(ctx, rejected); });
  messages.push_back(wrong_message);
  EXPECT_EQ(wrong_message.find(*wrong.api_key), std::string::npos)
      << "a rejected key appears in the error message";
  RunOptions timed;
  timed.timeout = Seconds(1);
  ctx.note_wait(*timed.timeout);
  messages.push_back(describe_throw([&] { ctx.run(b, Shell{"sleep 10"}, timed); }));
  // Bodies and query strings where the platform shows them (the mock);
  // a live session sees its requests' paths only.
  const bool content = p.offers(kPlatformRequestContent);
  for (const auto& r :
       p.offers(kPlatformJournal) ? p.requests() : std::vector<HttpRequestRecord>{}) {
    EXPECT_EQ(r.path.find(key), std::string::npos) << "the API key is in a path";
    if (!content) continue;
    EXPECT_EQ(r.body.find(key), std::string::npos)
        << "the API key is in the body of " << r.method << " " << r.path;
    EXPECT_EQ(r.query.find(key), std::string::npos) << "the API key is in a query string";
    EXPECT_EQ(r.body.find("lizardToken"), std::string::npos)
        << "a request carries lizardToken: " << r.method << " " << r.path;
  }
  for (const auto& m : messages) {
    EXPECT_EQ(m.find(key), std::string::npos) << "the API key is in an error message";
  }
  for (const auto& line : p.log_lines()) {
    EXPECT_EQ(line.find(key), std::string::npos) << "the API key is in a log line";
  }
  EXPECT_FALSE(p.log_carried_a_secret())
      << "a secret (the API key) is in the log, in a part past what is kept of it";
}

void lizard_output_past_server_cap(RuleContext& ctx) {
  auto& p = platform(ctx);
  auto b = ctx.make();
  first_use(ctx, b);
  const std::size_t size = 3 * 1024 * 1024;
  std::string expected;
  for (long i = 1; expected.size() < size; ++i) expected += std::to_string(i) + "\n";
  expected.resize(size);
  std::string expected_err = std::string("\xE2\x82\xAC", 3) + std::string(1, '\0') + "tail";
  const bool journal = p.offers(kPlatformJournal);
  if (journal) p.clear_requests();
  auto r = ctx.run(b, Shell{"seq 1 100000000 | head -c " + std::to_string(size) +
                            "; seq 1 100000000 | head -c " + std::to_string(size) +
                            " >&2; printf '\\342\\202\\254\\000tail' >&2"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.size(), expected.size());
  EXPECT_TRUE(r.out == expected) << "3 MiB on stdout did not come back byte-exact";
  EXPECT_TRUE(r.err == expected + expected_err) << "3 MiB on stderr did not come back byte-exact";
  if (!journal) return;
  bool file_read = false;
  for (const auto& req : p.requests()) {
    if (req.method == "GET" && req.path.size() > 6 &&
        req.path.compare(req.path.size() - 6, 6, "/files") == 0) {
      file_read = true;
    }
  }
  EXPECT_TRUE(file_read) << "the output did not come through the files API: "
                         << describe_requests(p.requests());
}

namespace {

// True when the request is a files-API write (POST .../files).
bool is_file_write(const HttpRequestRecord& r) {
  return r.method == "POST" && r.path.size() >= 6 &&
         r.path.compare(r.path.size() - 6, 6, "/files") == 0;
}

// The bytes a files-API write puts in the file: its content, decoded when
// it says "encoding":"base64". nullopt when the body is not such a write.
std::optional<std::string> written_bytes(const HttpRequestRecord& r, bool& base64) {
  rapidjson::Document body;
  body.Parse(r.body.c_str(), r.body.size());
  if (body.HasParseError() || !body.IsObject()) return std::nullopt;
  auto content = body.FindMember("content");
  if (content == body.MemberEnd() || !content->value.IsString()) return std::nullopt;
  std::string text(content->value.GetString(), content->value.GetStringLength());
  auto enc = body.FindMember("encoding");
  base64 = enc != body.MemberEnd() && enc->value.IsString() &&
           std::string(enc->value.GetString()) == "base64";
  if (!base64) return text;
  bool ok = false;
  std::string decoded = base64_decode(text, ok);
  if (!ok) return std::nullopt;
  return decoded;
}

}  // namespace

void lizard_binary_files(RuleContext& ctx) {
  LIZARD_NEED_PLATFORM(ctx, kPlatformJournal);
  auto& p = platform(ctx);
  auto b = ctx.make();
  first_use(ctx, b);
  auto* f = &ctx.fs(*b);
  // UTF-8 content: one files-API request carrying it.
  const std::string text = "plain text, \xc3\xa9t\xc3\xa9 \xe2\x9c\x93\n";
  const std::string text_path = "/workspace/lc-text-" + random_hex(6) + ".txt";
  p.clear_requests();
  f->write_bytes(text_path, text);
  const auto text_writes = p.requests();
  EXPECT_EQ(text_writes.size(), 1u)
      << "a UTF-8 write took other requests: " << describe_requests(text_writes);
  // What a write carried, where the platform shows bodies (the mock).
  const bool content = p.offers(kPlatformRequestContent);
  bool carried = !content;
  for (const auto& r : content ? text_writes : std::vector<HttpRequestRecord>{}) {
    bool base64 = false;
    if (is_file_write(r) && written_bytes(r, base64) == text) carried = true;
  }
  EXPECT_TRUE(carried) << "no files-API write carried the text: " << describe_requests(text_writes);
  // Every byte value: never uploaded as bytes that are not UTF-8 (the
  // kubernetes era refuses them); UTF-8 text decoded in the sandbox.
  std::string data;
  for (int round = 0; round < 4; ++round) {
    for (int i = 0; i < 256; ++i) data += static_cast<char>((i * 7 + round) & 0xFF);
  }
  const std::string path = "/workspace/lc-binary-" + random_hex(6) + ".bin";
  p.clear_requests();
  f->write_bytes(path, data);
  const auto writes = p.requests();
  for (const auto& r : content ? writes : std::vector<HttpRequestRecord>{}) {
    bool base64 = false;
    const auto bytes = is_file_write(r) ? written_bytes(r, base64) : std::nullopt;
    EXPECT_FALSE(bytes && base64 && !workspace::is_valid_utf8(*bytes))
        << "a files-API write uploaded bytes that are not UTF-8 (the kubernetes era takes UTF-8 "
           "only): "
        << r.method << " " << r.path;
  }
  EXPECT_LE(writes.size(), 2u) << "a binary write took more than two requests: "
                               << describe_requests(writes);
  p.clear_requests();
  EXPECT_TRUE(f->read_bytes(text_path) == text) << "the text did not round-trip";
  const std::string back = f->read_bytes(path);
  EXPECT_TRUE(back == data) << "the bytes did not round-trip";
  bool raw_read = false;
  for (const auto& r : p.requests()) {
    EXPECT_EQ(r.path.find("/exec"), std::string::npos) << "read_bytes used a command";
    if (r.method == "GET" && r.path.size() >= 6 &&
        r.path.compare(r.path.size() - 6, 6, "/files") == 0 &&
        (!content || r.query.find("path=") != std::string::npos)) {
      raw_read = true;
    }
  }
  EXPECT_TRUE(raw_read) << "read_bytes did not use the raw files-API read";
}

void lizard_credentials_rejected(RuleContext& ctx) {
  LIZARD_NEED_PLATFORM(ctx, kPlatformBackends | kPlatformJournal);
  auto& p = platform(ctx);
  BackendOverrides wrong;
  wrong.api_key = "liz_rejected_" + random_hex(16);
  p.clear_requests();
  auto creating = ctx.adopt(p.make_with(wrong));
  std::string message;
  bool unavailable = false;
  bool auth_type = false;
  try {
    first_use(ctx, creating);
    message = "no exception";
  } catch (const WorkspaceAuthenticationError& e) {
    auth_type = unavailable = true;
    message = e.what();
  } catch (const WorkspaceUnavailableError& e) {
    unavailable = true;
    message = e.what();
  } catch (const RuleAbort&) {
    throw;
  } catch (const std::exception&) {
    message = describe_throw([&] { throw; });
  }
  const std::string m = lower(message);
  const bool clear = auth_type || m.find("auth") != std::string::npos ||
                     m.find("credential") != std::string::npos ||
                     m.find("api key") != std::string::npos;
  EXPECT_TRUE(unavailable && clear)
      << "a rejected key on create should be a clear authentication error "
         "(a WorkspaceUnavailableError), got "
      << one_line(message);
  // Attach with a rejected key.
  auto good = ctx.make();
  first_use(ctx, good);
  BackendOverrides attach = wrong;
  attach.ref = good->ref();
  p.clear_requests();
  auto attached = ctx.adopt(p.make_with(attach));
  std::string got = expect_throw<WorkspaceUnavailableError>([&] { first_use(ctx, attached); });
  EXPECT_EQ(got, "") << "a rejected key on attach: " << one_line(got);
  EXPECT_EQ(count_creates(p.requests()), 0) << "a rejected key on attach sent a create";
}

namespace {

// A fault answering every `method path` request with `status` and `body`.
FaultSpec answer_fault(std::string method, std::string path, int status, std::string body) {
  return {.method = std::move(method),
          .path_pattern = std::move(path),
          .kind = FaultSpec::Kind::kRespond,
          .status = status,
          .body = std::move(body),
          .times = -1};
}

// A fault dropping the connection (kClose or kCloseAfterHandling) on the
// next `times` requests to `method path` (-1: every one).
FaultSpec drop_fault(std::string method, std::string path, FaultSpec::Kind kind, int times = -1) {
  return {.method = std::move(method),
          .path_pattern = std::move(path),
          .kind = kind,
          .status = 0,
          .body = "",
          .times = times};
}

// "" when `fn` raised WorkspaceTransientError (with http_status() `status`
// when one is given), else what happened.
std::string transient_error_detail(const std::function<void()>& fn, std::optional<int> status) {
  return expect_throw<WorkspaceTransientError>(fn, [&](const WorkspaceTransientError& e) {
    if (!status || e.http_status() == status) return std::string();
    return "http_status() " + (e.http_status() ? std::to_string(*e.http_status()) : "none");
  });
}

void expect_transient(const std::string& what, const std::function<void()>& fn,
                      std::optional<int> status) {
  const std::string detail = transient_error_detail(fn, status);
  EXPECT_EQ(detail, "") << what << " should raise WorkspaceTransientError, got "
                        << one_line(detail);
}

// A 503 on create, then a create whose answer was lost after the sandbox was made.
void transient_errors_on_create(RuleContext& ctx, PlatformControl& p) {
  p.clear_requests();
  p.add_fault(answer_fault("POST", "/api/sandboxes", 503, R"({"error":"Service unavailable"})"));
  auto b1 = ctx.make();
  expect_transient(
      "a 503 on create", [&] { first_use(ctx, b1); }, 503);
  p.clear_faults();
  p.clear_requests();
  p.add_fault(drop_fault("POST", "/api/sandboxes", FaultSpec::Kind::kCloseAfterHandling, 1));
  auto b2 = ctx.make();
  const std::string lost = expect_throw<WorkspaceTransientError>(
      [&] { first_use(ctx, b2); },
      [](const WorkspaceTransientError& e) {
        return std::string(e.may_have_been_admitted() ? "" : "may_have_been_admitted() is false");
      });
  EXPECT_EQ(lost, "") << "a create whose answer was lost after the server acted on it should "
                         "raise WorkspaceTransientError that may have been admitted, got "
                      << one_line(lost);
  EXPECT_EQ(count_creates(p.requests()), 1)
      << "a create that may have been admitted was sent again: " << describe_requests(p.requests());
  p.clear_faults();
}

// A 429 and a dropped connection on exec, a 502 and a dropped connection on a file read.
void transient_errors_on_live_sandbox(RuleContext& ctx, PlatformControl& p) {
  auto b = ctx.make();
  first_use(ctx, b);
  p.add_fault(answer_fault("POST", "/api/sandboxes/*/exec", 429,
                           R"({"error":"Rate limit exceeded","retryAfterS":1})"));
  if (b->commands())
    expect_transient(
        "a 429 on exec", [&] { ctx.run(b, Argv{{"true"}}); }, 429);
  p.clear_faults();
  if (auto* f = b->filesystem()) {
    p.add_fault(answer_fault("GET", "/api/sandboxes/*/files", 502, R"({"error":"Bad gateway"})"));
    expect_transient(
        "a 502 on a file read", [&] { f->read_bytes("/workspace/x"); }, 502);
    p.clear_faults();
    p.add_fault(drop_fault("GET", "/api/sandboxes/*/files", FaultSpec::Kind::kClose));
    expect_transient("a dropped connection on a file read", [&] { f->read_bytes("/workspace/x"); },
                     {});
    p.clear_faults();
  }
  if (b->commands()) {
    p.add_fault(drop_fault("POST", "/api/sandboxes/*/exec", FaultSpec::Kind::kClose));
    expect_transient("a dropped connection on exec", [&] { ctx.run(b, Argv{{"true"}}); }, {});
    p.clear_faults();
  }
}

}  // namespace

void lizard_transient_errors(RuleContext& ctx) {
  LIZARD_NEED_PLATFORM(ctx, kPlatformFaults | kPlatformJournal);
  auto& p = platform(ctx);
  transient_errors_on_create(ctx, p);
  transient_errors_on_live_sandbox(ctx, p);
}

void lizard_no_rerun_after_drop(RuleContext& ctx) {
  LIZARD_NEED_PLATFORM(ctx, kPlatformFaults);
  auto& p = platform(ctx);
  auto b = ctx.make();
  const std::string dir = ctx.scratch(b);
  const std::string counter = dir + "/runs";
  p.add_fault(drop_fault("POST", "/api/sandboxes/*/exec", FaultSpec::Kind::kCloseAfterHandling, 1));
  std::string outcome;
  ctx.note_wait(Seconds(1));  // the command's own sleep
  try {
    auto r = ctx.run(b, Shell{"echo x >> " + sh_quote(counter) + "; sleep 1; printf done"});
    outcome = r.out == "done" && r.exit_code == 0 ? "" : "a wrong result: " + one_line(r.out);
  } catch (const WorkspaceTransientError& e) {
    const std::string m = lower(e.what());
    outcome = e.may_have_been_admitted() || m.find("unknown") != std::string::npos
                  ? ""
                  : std::string("a transient error that does not say the outcome is unknown: ") +
                        e.what();
  } catch (const WorkspaceError& e) {
    outcome = lower(e.what()).find("unknown") != std::string::npos
                  ? ""
                  : std::string("an error that does not say the outcome is unknown: ") + e.what();
  } catch (const RuleAbort&) {
    throw;
  } catch (const std::exception&) {
    outcome = describe_throw([&] { throw; });
  }
  p.clear_faults();
  EXPECT_EQ(outcome, "") << "after a dropped exec the result must be recovered or reported "
                            "as unknown";
  const std::string runs = ctx.sh(b, "cat " + sh_quote(counter) + " 2>/dev/null || true");
  EXPECT_EQ(runs, "x\n") << "the command ran " << std::count(runs.begin(), runs.end(), 'x')
                         << " times";
}

void lizard_long_command(RuleContext& ctx) {
  auto& p = platform(ctx);
  const auto limit = p.exec_limit();
  if (limit > std::chrono::seconds(20)) {
    GTEST_SKIP() << "the platform's per-request exec limit is "
                 << std::chrono::duration_cast<std::chrono::seconds>(limit).count()
                 << " s, too long to exercise here";
  }
  auto b = ctx.make();
  const std::string dir = ctx.scratch(b);
  const std::string counter = dir + "/runs";
  const double seconds = std::chrono::duration<double>(limit).count() * 2 + 0.5;
  std::string expected = "start\n";
  for (int i = 1; i <= 2000; ++i) expected += std::to_string(i) + "\n";
  expected += "end";
  ctx.note_wait(Seconds(seconds));  // outlasting the exec limit twice is the point
  auto r = ctx.run(b,
                   Shell{"echo x >> " + sh_quote(counter) + "; echo start; sleep " +
                         std::to_string(seconds) + "; seq 1 2000; printf end; printf e >&2"},
                   {}, Seconds(120));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, expected);
  EXPECT_EQ(r.err, "e");
  EXPECT_EQ(ctx.sh(b, "cat " + sh_quote(counter)), "x\n") << "the command was started again";
}

void lizard_unsupported_501(RuleContext& ctx) {
  LIZARD_NEED_PLATFORM(ctx, kPlatformFaults);
  auto& p = platform(ctx);
  auto b = ctx.make();
  first_use(ctx, b);
  auto check = [&](const std::string& what, const std::function<void()>& fn) {
    std::string detail;
    try {
      fn();
      detail = "no exception";
    } catch (const WorkspaceNotSupportedError&) {
    } catch (const RuleAbort&) {
      throw;
    } catch (const std::exception& e) {
      const std::string m = lower(e.what());
      if (m.find("not supported") == std::string::npos) detail = describe_throw([&] { throw; });
    }
    EXPECT_EQ(detail, "") << what << " answered 501 should be a clear not-supported error, got "
                          << one_line(detail);
  };
  if (auto* f = b->filesystem()) {
    p.add_fault(
        answer_fault("GET", "/api/sandboxes/*/files", 501, R"({"error":"Not implemented"})"));
    check("a file read", [&] { f->read_bytes("/workspace/x"); });
    p.clear_faults();
  }
  if (b->commands()) {
    p.add_fault(
        answer_fault("POST", "/api/sandboxes/*/exec", 501, R"({"error":"Not implemented"})"));
    check("a command", [&] { ctx.run(b, Argv{{"true"}}); });
    p.clear_faults();
  }
}

}  // namespace lizard::conformance::internal
