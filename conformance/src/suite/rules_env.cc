// The environment and ref rules (env.*).
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <thread>

#include "lizard/workspace/checks.h"
#include "rule_bodies.h"
#include "rule_context.h"

namespace lizard::conformance::internal {

namespace {

// An operation that needs the environment, through whatever the backend offers.
void touch_environment(RuleContext& ctx, const BackendPtr& b) {
  if (ctx.has(Capability::kCommands)) {
    ctx.run(b, Argv{{"true"}});
  } else if (ctx.has(Capability::kFilesystem)) {
    ctx.path_exists(b, b->working_dir());
  } else if (ctx.has(Capability::kRealpath)) {
    auto* r = &ctx.rp(*b);
    std::string wd = b->working_dir();
    ctx.guarded([b, r, wd] { r->realpath(wd); }, Seconds(60), "realpath()");
  } else {
    throw RuleAbort("the backend offers no capability at all");
  }
}

// Writes `data` to `path` with the files API, or with a command.
void put_file(RuleContext& ctx, const BackendPtr& b, const std::string& path,
              const std::string& data) {
  if (ctx.has(Capability::kFilesystem)) {
    auto* f = &ctx.fs(*b);
    ctx.guarded([b, f, path, data] { f->write_bytes(path, data); }, Seconds(60), "write_bytes()");
  } else {
    ctx.sh(b, "printf %s " + sh_quote(data) + " > " + sh_quote(path));
  }
}

std::string get_file(RuleContext& ctx, const BackendPtr& b, const std::string& path) {
  if (ctx.has(Capability::kFilesystem)) {
    auto* f = &ctx.fs(*b);
    auto out = std::make_shared<std::string>();
    ctx.guarded([b, f, path, out] { *out = f->read_bytes(path); }, Seconds(60), "read_bytes()");
    return *out;
  }
  return ctx.sh(b, "cat " + sh_quote(path));
}

bool can_store_files(RuleContext& ctx) {
  return ctx.has(Capability::kFilesystem) ||
         (ctx.has(Capability::kCommands) && !ctx.session().deviations().no_posix_shell);
}

}  // namespace

void env_ref_stable(RuleContext& ctx) {
  auto b = ctx.make();
  const auto before = b->ref();
  touch_environment(ctx, b);
  const auto after = b->ref();
  ASSERT_TRUE(after.has_value()) << "ref() is empty after the environment was used";
  EXPECT_FALSE(after->provider.empty()) << "the ref's provider is empty";
  EXPECT_FALSE(after->id.empty()) << "the ref's id is empty";
  if (before) {
    EXPECT_EQ(before->to_string(), after->to_string())
        << "the ref was set before first use and then changed";
  }
  // More operations, some at once, never change it.
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      try {
        touch_environment(ctx, b);
      } catch (...) {
        ++errors;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0) << "operations on a live environment failed";
  const auto later = b->ref();
  ASSERT_TRUE(later.has_value());
  EXPECT_EQ(after->to_string(), later->to_string()) << "the ref changed after more operations";
}

void env_working_dir_canonical(RuleContext& ctx) {
  auto b = ctx.make();
  const std::string wd = b->working_dir();
  ASSERT_FALSE(wd.empty()) << "working_dir() is empty";
  ASSERT_EQ(wd.front(), '/') << "working_dir() is not absolute: " << wd;
  EXPECT_EQ(workspace::normalize_path(wd), wd) << "working_dir() is not normalized";
  bool checked = false;
  if (ctx.has(Capability::kCommands) && !ctx.session().deviations().no_posix_shell) {
    auto r = ctx.run(b, Shell{"pwd -P"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.out, wd + "\n") << "pwd -P in a command does not print working_dir()";
    checked = true;
  }
  if (ctx.has(Capability::kRealpath)) {
    auto* r = &ctx.rp(*b);
    auto resolved = std::make_shared<std::string>();
    ctx.guarded([b, r, wd, resolved] { *resolved = r->realpath(wd); }, Seconds(60), "realpath()");
    EXPECT_EQ(*resolved, wd) << "working_dir() is not symlink-free: realpath differs";
    checked = true;
  }
  EXPECT_EQ(wd, b->working_dir()) << "working_dir() changed after first use";
  if (!checked) GTEST_SKIP() << "no command or realpath capability to check symlinks with";
}

void env_concurrent_first_use(RuleContext& ctx) {
  if (!can_store_files(ctx)) GTEST_SKIP() << "needs the files API or shell commands";
  auto b = ctx.make();
  const std::string wd = b->working_dir();
  const std::string tag = "lc-cfu-" + random_hex(8);
  constexpr int kThreads = 8;
  std::barrier start(kThreads);
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  const bool use_fs = ctx.has(Capability::kFilesystem);
  auto* f = use_fs ? &ctx.fs(*b) : nullptr;
  auto* c = use_fs ? nullptr : &ctx.cmd(*b);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      const std::string path = wd + "/" + tag + "-" + std::to_string(i);
      start.arrive_and_wait();
      try {
        if (f) {
          f->write_bytes(path, std::to_string(i));
        } else {
          auto r = c->run(Shell{"printf %s " + std::to_string(i) + " > " + sh_quote(path)});
          if (r.exit_code != 0) failures[i] = "exit " + std::to_string(r.exit_code);
        }
      } catch (...) {  // whatever it is: a throw out of this thread would end the runner
        failures[i] = describe_throw([] { throw; });
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_EQ(failures[i], "") << "operation " << i << " of 8 concurrent first uses failed";
  }
  ASSERT_TRUE(b->ref().has_value()) << "no ref after first use";
  // Every write reached the one environment this backend now names.
  for (int i = 0; i < kThreads; ++i) {
    const std::string path = wd + "/" + tag + "-" + std::to_string(i);
    EXPECT_TRUE(ctx.path_exists(b, path))
        << "write " << i << " did not reach the backend's environment (two environments?)";
  }
  if (auto* p = ctx.platform()) {
    int creates = 0;
    for (const auto& req : p->requests()) {
      if (req.method == "POST" && req.path == "/api/sandboxes") ++creates;
    }
    EXPECT_EQ(creates, 1) << "8 concurrent first uses sent " << creates << " creates";
  }
  if (ctx.session().can_attach()) {
    auto other = ctx.attach(*b->ref());
    for (int i = 0; i < kThreads; ++i) {
      const std::string path = wd + "/" + tag + "-" + std::to_string(i);
      EXPECT_TRUE(ctx.path_exists(other, path)) << "write " << i << " not seen through the ref";
    }
  }
  for (int i = 0; i < kThreads; ++i) {
    const std::string path = wd + "/" + tag + "-" + std::to_string(i);
    try {
      if (f) f->remove(path);
      if (c) c->run(Argv{{"rm", "-f", "--", path}});
    } catch (...) {
    }
  }
}

void env_attach_by_ref(RuleContext& ctx) {
  if (!can_store_files(ctx)) GTEST_SKIP() << "needs the files API or shell commands";
  auto b = ctx.make();
  const std::string dir = ctx.scratch(b);
  const std::string payload = "attach-" + random_hex(12);
  put_file(ctx, b, dir + "/from-original", payload);
  const auto ref = b->ref();
  ASSERT_TRUE(ref.has_value());
  auto other = ctx.attach(*ref);
  ASSERT_TRUE(other->ref().has_value()) << "an attached backend has no ref";
  EXPECT_EQ(other->ref()->to_string(), ref->to_string());
  EXPECT_EQ(get_file(ctx, other, dir + "/from-original"), payload)
      << "the attached backend does not see the original's file";
  if (ctx.has(Capability::kCommands) && !ctx.session().deviations().no_posix_shell) {
    auto r = ctx.run(other, Shell{"cat " + sh_quote(dir + "/from-original")});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.out, payload) << "commands of the attached backend do not see the file";
  }
  const std::string back = "back-" + random_hex(12);
  put_file(ctx, other, dir + "/from-attached", back);
  EXPECT_EQ(get_file(ctx, b, dir + "/from-attached"), back)
      << "the original does not see what the attached backend wrote";
  EXPECT_EQ(other->ref()->to_string(), ref->to_string()) << "the attached ref changed";
}

namespace {

// Expects `fn` to raise WorkspaceUnavailableError; returns a description otherwise.
std::string expect_unavailable(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const workspace::WorkspaceUnavailableError&) {
    return "";
  } catch (const std::exception& e) {
    return describe_throw([&] { throw; });
  }
  return "no exception";
}

}  // namespace

void env_attach_destroyed_unavailable(RuleContext& ctx) {
  auto b = ctx.make();
  touch_environment(ctx, b);
  const auto ref = b->ref();
  ASSERT_TRUE(ref.has_value());
  b->destroy();
  for (int round = 0; round < 2; ++round) {
    auto other = ctx.attach(*ref);
    // On the rule's thread: touch_environment guards each of its calls, and
    // a guarded wrapper around it would leave an abandoned thread holding
    // references to this frame and to the context.
    const std::string got = expect_unavailable([&] { touch_environment(ctx, other); });
    EXPECT_EQ(got, "") << "attempt " << round + 1
                       << ": an operation through a destroyed ref should raise "
                          "WorkspaceUnavailableError, got "
                       << one_line(got);
    if (other->ref()) {
      EXPECT_EQ(other->ref()->to_string(), ref->to_string())
          << "attaching to a destroyed environment created another";
    }
  }
  if (auto* p = ctx.platform()) {
    int creates = 0;
    for (const auto& req : p->requests()) {
      if (req.method == "POST" && req.path == "/api/sandboxes") ++creates;
    }
    EXPECT_EQ(creates, 1) << "a create was sent after attaching to a destroyed environment";
  }
}

void env_destroy_during_command(RuleContext& ctx) {
  auto b = ctx.make();
  const std::string dir = ctx.scratch(b);
  const std::string marker = dir + "/started";
  auto* c = &ctx.cmd(*b);
  auto outcome = std::make_shared<std::string>("still running");
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::thread([b, c, marker, outcome, done] {
    std::string result;
    try {
      auto r = c->run(Shell{"touch " + sh_quote(marker) + "; sleep 40; echo finished"});
      result = "returned exit " + std::to_string(r.exit_code);
    } catch (const workspace::WorkspaceUnavailableError&) {
      result = "";
    } catch (...) {  // whatever it is: a throw out of this thread would end the runner
      result = describe_throw([&] { throw; });
    }
    *outcome = result;
    done->store(true);
  }).detach();
  ASSERT_TRUE(wait_until([&] { return done->load() || ctx.path_exists(b, marker); }, Seconds(30)))
      << "the command did not start within 30 s";
  ASSERT_FALSE(done->load()) << "the command ended before the environment was destroyed: "
                             << *outcome;
  b->destroy();
  ASSERT_TRUE(wait_until([&] { return done->load(); }, Seconds(25)))
      << "run() did not return within 25 s of destroy()";
  EXPECT_EQ(*outcome, "") << "run() should raise WorkspaceUnavailableError after destroy(), got "
                          << one_line(*outcome);
}

void env_outlives_backend_object(RuleContext& ctx) {
  if (!can_store_files(ctx)) GTEST_SKIP() << "needs the files API or shell commands";
  auto b = ctx.make();
  const std::string wd = b->working_dir();
  const std::string path = wd + "/lc-outlives-" + random_hex(8);
  const std::string payload = "kept-" + random_hex(12);
  put_file(ctx, b, path, payload);
  const auto ref = b->ref();
  ASSERT_TRUE(ref.has_value());
  ctx.track(*ref);
  b.reset();  // drops the backend object; the environment must stay
  auto again = ctx.attach(*ref);
  std::string got;
  std::string error = describe_throw([&] { got = get_file(ctx, again, path); });
  EXPECT_EQ(error, "none") << "the environment is gone after the backend object was dropped";
  EXPECT_EQ(got, payload);
  if (again->ref()) {
    EXPECT_EQ(again->ref()->to_string(), ref->to_string());
  }
}

}  // namespace lizard::conformance::internal
