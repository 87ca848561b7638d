// The lizard profile rules about the sandbox's life (lizard.*): construction,
// create, refs, attach, destroy, expiry — seen through the session's PlatformControl.
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

void lizard_no_request_at_construction(RuleContext& ctx) {
  LIZARD_NEED_PLATFORM(ctx, kPlatformBackends | kPlatformJournal);
  auto& p = platform(ctx);
  p.clear_requests();
  auto b = ctx.make();
  (void)b->ref();
  (void)b->working_dir();
  (void)b->capabilities();
  auto other = ctx.adopt(p.make_with({}));
  BackendOverrides attach;
  attach.ref = WorkspaceRef{"lizard", "sbx_lc" + random_hex(12)};
  auto attached = ctx.adopt(p.make_with(attach));
  (void)attached->ref();
  EXPECT_TRUE(p.requests().empty()) << "building backends sent " << describe_requests(p.requests());
  first_use(ctx, b);
  EXPECT_FALSE(p.requests().empty()) << "the journal saw no request even after first use";
}

void lizard_one_create(RuleContext& ctx) {
  LIZARD_NEED_PLATFORM(ctx, kPlatformJournal);
  auto& p = platform(ctx);
  p.clear_requests();
  auto b = ctx.make();
  constexpr int kThreads = 8;
  std::barrier start(kThreads);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      try {
        if (auto* c = b->commands()) {
          c->run(Argv{{"true"}});
        } else if (auto* f = b->filesystem()) {
          f->exists(b->working_dir());
        }
      } catch (...) {
        ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(count_creates(p.requests()), 1) << describe_requests(p.requests());
  first_use(ctx, b);
  EXPECT_EQ(count_creates(p.requests()), 1) << "a later operation sent another create";
}

void lizard_create_body(RuleContext& ctx) {
  LIZARD_NEED_PLATFORM(ctx, kPlatformBackends | kPlatformJournal | kPlatformRequestContent);
  auto& p = platform(ctx);
  // Invalid sizes: std::invalid_argument before any request.
  for (const std::string size : {"huge", "", "SMALL", "medium "}) {
    p.clear_requests();
    std::string got = expect_throw<std::invalid_argument>([&] {
      BackendOverrides o;
      o.size = size;
      auto b = ctx.adopt(p.make_with(o));
      first_use(ctx, b);
    });
    EXPECT_EQ(got, "") << "size \"" << size << "\" should be std::invalid_argument, got "
                       << one_line(got);
    EXPECT_EQ(count_creates(p.requests()), 0) << "size \"" << size << "\" sent a create";
  }
  struct Case {
    BackendOverrides overrides;
    std::string size;
    long long lifetime_ms;
  };
  BackendOverrides configured;
  configured.size = "small";
  configured.lifetime = std::chrono::minutes(15);
  configured.env = {{"LC_ONE", "1"}, {"LC_TWO", "two words"}};
  BackendOverrides large;
  large.size = "large";
  BackendOverrides defaults;
  const std::vector<Case> cases = {
      {configured, "small", 15 * 60 * 1000}, {large, "large", -1}, {defaults, "", 3600 * 1000}};
  for (const auto& c : cases) {
    p.clear_requests();
    auto b = ctx.adopt(p.make_with(c.overrides));
    first_use(ctx, b);
    const auto requests = p.requests();
    std::vector<HttpRequestRecord> creates;
    std::copy_if(requests.begin(), requests.end(), std::back_inserter(creates), is_create);
    ASSERT_EQ(creates.size(), 1u) << describe_requests(requests);
    rapidjson::Document body;
    body.Parse(creates[0].body.c_str(), creates[0].body.size());
    ASSERT_TRUE(!body.HasParseError() && body.IsObject())
        << "the create body is not a JSON object: " << one_line(creates[0].body);
    auto text = [&](const char* name) -> std::string {
      auto it = body.FindMember(name);
      return it != body.MemberEnd() && it->value.IsString() ? it->value.GetString() : "<absent>";
    };
    EXPECT_EQ(text("template"), "interpreter");
    if (!c.size.empty()) {
      EXPECT_EQ(text("size"), c.size) << "the configured size";
    }
    if (c.lifetime_ms > 0) {
      auto it = body.FindMember("timeoutMs");
      ASSERT_TRUE(it != body.MemberEnd() && it->value.IsNumber()) << "no timeoutMs (lifetime)";
      EXPECT_EQ(it->value.GetDouble(), static_cast<double>(c.lifetime_ms))
          << (c.overrides.lifetime ? "the configured lifetime" : "the default lifetime (1 h)");
    }
    auto envs = body.FindMember("envs");
    std::map<std::string, std::string> sent;
    if (envs != body.MemberEnd()) {
      ASSERT_TRUE(envs->value.IsObject()) << "envs is not an object";
      for (auto m = envs->value.MemberBegin(); m != envs->value.MemberEnd(); ++m) {
        sent[m->name.GetString()] = m->value.IsString() ? m->value.GetString() : "<not a string>";
      }
    }
    EXPECT_EQ(sent, c.overrides.env) << "envs must hold exactly what the caller passed";
    EXPECT_EQ(body.FindMember("lizardToken"), body.MemberEnd()) << "the create sends lizardToken";
  }
}

void lizard_root_in_workspace(RuleContext& ctx) {
  auto b = ctx.make();
  EXPECT_EQ(b->working_dir(), "/workspace");
  auto r = ctx.run(b, Shell{"id -u; pwd -P"});
  EXPECT_EQ(r.out, "0\n/workspace\n") << "commands must run as root in /workspace";
}

void lizard_unknown_ref(RuleContext& ctx) {
  LIZARD_NEED_PLATFORM(ctx, kPlatformBackends | kPlatformJournal);
  auto& p = platform(ctx);
  p.clear_requests();
  BackendOverrides unknown;
  unknown.ref = WorkspaceRef{"lizard", "sbx_" + random_hex(16)};
  auto b = ctx.adopt(p.make_with(unknown));
  std::string got = expect_throw<WorkspaceUnavailableError>([&] { first_use(ctx, b); });
  EXPECT_EQ(got, "") << "an unknown ref should be WorkspaceUnavailableError, got " << one_line(got);
  got = expect_throw<WorkspaceUnavailableError>([&] { first_use(ctx, b); });
  EXPECT_EQ(got, "") << "second operation on an unknown ref: " << one_line(got);
  EXPECT_EQ(count_creates(p.requests()), 0) << "an unknown ref led to a create";
  // An expired one, where the platform's clock can be moved (without it,
  // lizard.expired-mid-session waits out a short lifetime instead).
  if (!p.offers(kPlatformClock)) return;
  auto live = ctx.make();
  first_use(ctx, live);
  ASSERT_TRUE(live->ref().has_value());
  p.expire_all();
  p.clear_requests();
  BackendOverrides expired;
  expired.ref = live->ref();
  auto again = ctx.adopt(p.make_with(expired));
  got = expect_throw<WorkspaceUnavailableError>([&] { first_use(ctx, again); });
  EXPECT_EQ(got, "") << "an expired ref should be WorkspaceUnavailableError, got " << one_line(got);
  EXPECT_EQ(count_creates(p.requests()), 0) << "an expired ref led to a create";
}

void lizard_ref_shapes(RuleContext& ctx) {
  LIZARD_NEED_PLATFORM(ctx, kPlatformBackends | kPlatformJournal);
  auto& p = platform(ctx);
  // A live sandbox, so that a shape which collapses onto another route (the
  // list, or a sandbox's sub-route) would find something to answer.
  auto live = ctx.make();
  first_use(ctx, live);
  ASSERT_TRUE(live->ref().has_value());
  const std::string id = live->ref()->id;
  const std::vector<std::string> shapes = {
      "",           ".",         "..",         "/",   id + "/", id + "/..",      "../" + id,
      id + "/exec", id + "?x=1", id + "#frag", "%2e", "%2E%2E", id + "%2Ffiles", "a%00b",
      "?",          "#"};
  for (const auto& shape : shapes) {
    p.clear_requests();
    std::string got;
    try {
      BackendOverrides o;
      o.ref = WorkspaceRef{"lizard", shape};
      auto b = ctx.adopt(p.make_with(o));
      first_use(ctx, b);
      got = "no exception";
    } catch (const WorkspaceUnavailableError&) {
    } catch (const std::invalid_argument&) {
    } catch (const RuleAbort&) {
      throw;
    } catch (const std::exception&) {
      got = describe_throw([] { throw; });
    }
    EXPECT_EQ(got, "") << "the ref id \"" << shape
                       << "\" must be WorkspaceUnavailableError or std::invalid_argument, got "
                       << one_line(got);
    for (const auto& r : p.requests()) {
      EXPECT_FALSE(r.status >= 200 && r.status < 300)
          << "the ref id \"" << shape << "\" reached a route that answered " << r.status << ": "
          << r.method << " " << r.path;
      EXPECT_FALSE(is_create(r)) << "the ref id \"" << shape << "\" sent a create";
      EXPECT_NE(r.method, "DELETE") << "the ref id \"" << shape << "\" sent a delete";
    }
  }
  // The live sandbox is untouched.
  EXPECT_EQ(ctx.run(live, Argv{{"echo", "still"}}).out, "still\n");
}

void lizard_no_renew_on_attach(RuleContext& ctx) {
  LIZARD_NEED_PLATFORM(ctx, kPlatformBackends | kPlatformJournal);
  auto& p = platform(ctx);
  auto b = ctx.make();
  first_use(ctx, b);
  ASSERT_TRUE(b->ref().has_value());
  p.clear_requests();
  BackendOverrides o;
  o.ref = b->ref();
  auto attached = ctx.adopt(p.make_with(o));
  first_use(ctx, attached);
  first_use(ctx, attached);
  for (const auto& r : p.requests()) {
    EXPECT_FALSE(r.path.size() >= 8 && r.path.compare(r.path.size() - 8, 8, "/timeout") == 0)
        << "attaching sent a lifetime change: " << r.method << " " << r.path;
    EXPECT_FALSE(is_create(r)) << "attaching sent a create";
  }
}

void lizard_run_end_keeps_sandbox(RuleContext& ctx) {
  LIZARD_NEED_PLATFORM(ctx, kPlatformBackends | kPlatformJournal);
  auto& p = platform(ctx);
  auto b = ctx.make();
  first_use(ctx, b);
  const std::string kept = b->working_dir() + "/lc-kept-" + random_hex(8);
  if (b->filesystem()) b->filesystem()->write_bytes(kept, "k");
  const auto ref = b->ref();
  ASSERT_TRUE(ref.has_value());
  ctx.track(*ref);
  b.reset();
  const std::string sandbox_path = "/api/sandboxes/" + ref->id;
  for (const auto& r : p.requests()) {
    EXPECT_FALSE(r.method == "DELETE" && r.path == sandbox_path)
        << "a delete was sent without destroy()";
  }
  BackendOverrides o;
  o.ref = ref;
  auto again = ctx.adopt(p.make_with(o));
  std::string got = describe_throw([&] { first_use(ctx, again); });
  EXPECT_EQ(got, "none") << "the sandbox is gone after its backend object ended";
  if (auto* f = again->filesystem()) {
    std::string content;
    got = describe_throw([&] { content = f->read_bytes(kept); });
    EXPECT_EQ(got, "none") << "a file did not survive the backend object";
    EXPECT_EQ(content, "k");
  }
}

void lizard_destroy(RuleContext& ctx) {
  LIZARD_NEED_PLATFORM(ctx, kPlatformJournal);
  auto& p = platform(ctx);
  auto b = ctx.make();
  first_use(ctx, b);
  const auto ref = b->ref();
  ASSERT_TRUE(ref.has_value());
  p.clear_requests();
  ctx.guarded([b] { b->destroy(); }, Seconds(60), "destroy()");
  bool deleted = false;
  for (const auto& r : p.requests()) {
    if (r.method == "DELETE" && r.path == "/api/sandboxes/" + ref->id) deleted = true;
  }
  EXPECT_TRUE(deleted) << "destroy() sent no delete: " << describe_requests(p.requests());
  std::string got = expect_throw<WorkspaceUnavailableError>([&] { first_use(ctx, b); });
  EXPECT_EQ(got, "") << "an operation after destroy(): " << one_line(got);
  if (b->filesystem()) {
    got = expect_throw<WorkspaceUnavailableError>(
        [&] { b->filesystem()->read_bytes("/workspace/x"); });
    EXPECT_EQ(got, "") << "read_bytes after destroy(): " << one_line(got);
  }
  got = describe_throw([&] { b->destroy(); });
  EXPECT_EQ(got, "none") << "destroying twice must not be an error";
}

namespace {

// Makes `b`'s sandbox expire: the platform's clock moved past its lifetime
// (true), or, without a clock, its short lifetime waited out in real time
// until an operation fails (false, with that operation's outcome in `got`).
bool expire(RuleContext& ctx, PlatformControl& p, const BackendPtr& b, Seconds lifetime,
            std::string& got) {
  if (p.offers(kPlatformClock)) {
    p.expire_all();
    return true;
  }
  ctx.note_wait(lifetime);  // the lifetime must pass; that is the point
  const auto deadline = Clock::now() + lifetime + std::chrono::seconds(90);
  while (Clock::now() < deadline) {
    got = expect_throw<WorkspaceUnavailableError>([&] { first_use(ctx, b); });
    if (got != "no exception") return false;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  got = "every operation still succeeded 90 s after the lifetime ended";
  return false;
}

}  // namespace

void lizard_expired_mid_session(RuleContext& ctx) {
  LIZARD_NEED_PLATFORM(ctx, kPlatformBackends);
  auto& p = platform(ctx);
  // Without the platform's clock: a lifetime short enough to wait out.
  constexpr Seconds kShortLifetime{10};
  BackendOverrides o;
  if (!p.offers(kPlatformClock)) {
    o.lifetime = std::chrono::duration_cast<std::chrono::milliseconds>(kShortLifetime);
  }
  auto b = ctx.adopt(p.make_with(o));
  first_use(ctx, b);
  std::string got;
  if (expire(ctx, p, b, kShortLifetime, got)) {
    got = expect_throw<WorkspaceUnavailableError>([&] { first_use(ctx, b); });
  }
  EXPECT_EQ(got, "") << "the operation after expiry: " << one_line(got);
  if (auto* f = b->filesystem()) {
    got = expect_throw<WorkspaceUnavailableError>([&] { f->read_bytes("/workspace/anything"); });
    EXPECT_EQ(got, "") << "read_bytes after expiry: " << one_line(got);
  }
  if (p.offers(kPlatformJournal)) {
    EXPECT_EQ(count_creates(p.requests()), 1) << "expiry led to a replacement sandbox";
  }
}

}  // namespace lizard::conformance::internal
