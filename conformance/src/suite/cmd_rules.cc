// The command rules (cmd.*).
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stop_token>
#include <thread>

#include "rule_bodies.h"
#include "rule_context.h"

namespace lizard::conformance::internal {

using workspace::WorkspaceCancelledError;
using workspace::WorkspaceOutputLimitError;
using workspace::WorkspaceTimeoutError;

namespace {

// What `seq FROM 1000000000` prints, cut to `bytes`.
std::string seq_bytes(long from, std::size_t bytes) {
  std::string text;
  text.reserve(bytes + 16);
  for (long i = from; text.size() < bytes; ++i) {
    text += std::to_string(i);
    text += '\n';
  }
  text.resize(bytes);
  return text;
}

std::string seq_cmd(long from, std::size_t bytes) {
  return "seq " + std::to_string(from) + " 100000000 | head -c " + std::to_string(bytes);
}

// Describes the difference between two long strings without printing them.
std::string diff_summary(const std::string& expected, const std::string& got) {
  if (expected == got) return "equal";
  std::size_t i = 0;
  while (i < expected.size() && i < got.size() && expected[i] == got[i]) ++i;
  return "expected " + std::to_string(expected.size()) + " bytes, got " +
         std::to_string(got.size()) + ", first difference at byte " + std::to_string(i);
}

// Whether a process group was stopped, told without waiting for a clock to
// run out: its processes wait for a gate file (`wait_for_gate`, polling every
// 0.1 s, for at most 20 s: a backend that ignores the timeout still returns
// within the rules' limits) before they leave their markers. Once the group
// should be gone, the rule opens the gate (`open_gate`) and looks for the
// markers after a window that a process still polling needs many times over:
// at least 1 s, and three times what opening the gate took (a command through
// the backend, so the window grows with a loaded machine or a remote sandbox).
// Zombies leave no marker, so a sandbox whose PID 1 does not reap is judged
// by what still runs. The window's 1 s is noted as waited.
std::string wait_for_gate(const std::string& gate) {
  return "i=0; while [ ! -e " + sh_quote(gate) +
         " ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done";
}

void open_gate(RuleContext& ctx, const BackendPtr& b, const std::string& gate) {
  constexpr auto kWindow = std::chrono::seconds(1);
  ctx.note_wait(Seconds(1));
  const auto opening = Clock::now();
  ctx.run(b, Shell{"touch " + sh_quote(gate)});
  const auto opened = Clock::now();
  std::this_thread::sleep_until(opened +
                                std::max<Clock::duration>(kWindow, 3 * (opened - opening)));
}

struct Outcome {
  std::optional<CommandResult> result;
  std::exception_ptr error;
  double seconds = 0;
};

// Runs on the rule's thread but never longer than `limit`.
Outcome run_timed(RuleContext& ctx, const BackendPtr& b, const Command& command,
                  const RunOptions& options, Seconds limit = Seconds(90)) {
  Outcome outcome;
  const auto start = Clock::now();
  try {
    outcome.result = ctx.run(b, command, options, limit);
  } catch (const RuleAbort&) {
    throw;
  } catch (...) {
    outcome.error = std::current_exception();
  }
  outcome.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return outcome;
}

std::string describe(const Outcome& outcome) {
  if (outcome.result) {
    return "returned exit " + std::to_string(outcome.result->exit_code) + " after " +
           std::to_string(outcome.seconds) + " s";
  }
  return describe_throw([&] { std::rethrow_exception(outcome.error); });
}

}  // namespace

void cmd_result_fields(RuleContext& ctx) {
  auto b = ctx.make();
  auto r = ctx.run(b, Shell{"printf out; printf err >&2; exit 7"});
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_EQ(r.out, "out");
  EXPECT_EQ(r.err, "err");
  auto zero = ctx.run(b, Shell{"printf ok"});
  EXPECT_EQ(zero.exit_code, 0);
  EXPECT_EQ(zero.out, "ok");
  EXPECT_EQ(zero.err, "");
}

void cmd_stdin_at_eof(RuleContext& ctx) {
  auto b = ctx.make();
  auto r = ctx.run(b, Shell{"read value || printf eof"}, {}, Seconds(30));
  EXPECT_EQ(r.out, "eof") << "stdin is not at EOF";
  EXPECT_EQ(r.exit_code, 0);
  auto bytes = ctx.run(b, Shell{"wc -c"}, {}, Seconds(30));
  std::string count;
  for (char ch : bytes.out) {
    if (ch != ' ' && ch != '\n') count += ch;
  }
  EXPECT_EQ(count, "0") << "stdin delivered bytes";
}

void cmd_missing_program_127(RuleContext& ctx) {
  auto b = ctx.make();
  const std::string name = "lc-no-such-program-" + random_hex(8);
  std::string error = describe_throw([&] {
    auto r = ctx.run(b, Argv{{name, "--version"}});
    EXPECT_EQ(r.exit_code, 127) << "a program that is not on PATH";
  });
  EXPECT_EQ(error, "none") << "a missing program must be a result, not an exception";
  error = describe_throw([&] {
    auto r = ctx.run(b, Argv{{"/nonexistent-" + random_hex(6) + "/" + name}});
    EXPECT_EQ(r.exit_code, 127) << "an absolute path that does not exist";
  });
  EXPECT_EQ(error, "none") << "a missing program must be a result, not an exception";
}

void cmd_not_executable_126(RuleContext& ctx) {
  auto b = ctx.make();
  const std::string dir = ctx.scratch(b);
  const std::string path = dir + "/not-executable";
  ctx.sh(b, "printf '#!/bin/sh\\necho ran\\n' > " + sh_quote(path) + " && chmod 644 " +
                sh_quote(path));
  std::string error = describe_throw([&] {
    auto r = ctx.run(b, Argv{{path}});
    EXPECT_EQ(r.exit_code, 126);
    EXPECT_EQ(r.out, "") << "the non-executable file ran";
  });
  EXPECT_EQ(error, "none") << "a non-executable program must be a result, not an exception";
}

void cmd_signal_exit_code(RuleContext& ctx) {
  auto b = ctx.make();
  EXPECT_EQ(ctx.run(b, Shell{"kill -9 $$"}).exit_code, 128 + 9);
  EXPECT_EQ(ctx.run(b, Shell{"kill -15 $$"}).exit_code, 128 + 15);
  EXPECT_EQ(ctx.run(b, Argv{{"sh", "-c", "kill -6 $$"}}).exit_code, 128 + 6);
}

void cmd_argv_literal(RuleContext& ctx) {
  auto b = ctx.make();
  std::string big;
  big.reserve(100 * 1024);
  const std::string alphabet = "abc $(x) `y` 'q' \"d\" ; && | > < * ? ~ \\ # !\n\t-";
  for (std::size_t i = 0; big.size() < 100 * 1024; ++i) big += alphabet[(i * 7) % alphabet.size()];
  big.resize(100 * 1024);
  const std::vector<std::string> items = {"$(echo injected)",
                                          "`echo injected`",
                                          "'single' \"double\" \\back",
                                          "a;b",
                                          "a && b || c",
                                          "line1\nline2\n",
                                          "-n",
                                          "--help",
                                          " leading and trailing ",
                                          "*",
                                          "",
                                          "caf\xC3\xA9 \xE2\x82\xAC",
                                          big};
  std::vector<std::string> argv = {"printf", "[%s]"};
  std::string expected;
  for (const auto& item : items) {
    argv.push_back(item);
    expected += "[" + item + "]";
  }
  auto r = ctx.run(b, Argv{argv});
  EXPECT_EQ(r.exit_code, 0) << one_line(r.err);
  EXPECT_TRUE(r.out == expected) << "argv items did not arrive literally: "
                                 << diff_summary(expected, r.out)
                                 << "; start of output: " << one_line(r.out.substr(0, 200));
  // A leading '-' in the program's first argument is not an option to a shell.
  auto dash = ctx.run(b, Argv{{"printf", "%s", "-e"}});
  EXPECT_EQ(dash.out, "-e");
}

void cmd_utf8_replacement(RuleContext& ctx) {
  auto b = ctx.make();
  // Invalid bytes: a lone 0xFF, a lone continuation byte, a cut 3-byte sequence.
  auto r = ctx.run(b, Shell{"printf 'a\\377b\\200c\\342\\202d'; printf 'e\\377f' >&2"});
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(r.out, "a" + fffd + "b" + fffd + "c" + fffd + "d");
  EXPECT_EQ(r.err, "e" + fffd + "f");
  // Valid multi-byte characters at every offset, across pipe and chunk boundaries.
  const std::string line = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";  // a é € 😀
  const int lines = 30000;
  std::string expected;
  for (int i = 0; i < lines; ++i) expected += line + "\n";
  auto big = ctx.run(b, Shell{"yes '" + line + "' | head -n " + std::to_string(lines) + "; yes '" +
                              line + "' | head -n " + std::to_string(lines) + " >&2"});
  EXPECT_TRUE(big.out == expected) << "stdout: " << diff_summary(expected, big.out);
  EXPECT_TRUE(big.err == expected) << "stderr: " << diff_summary(expected, big.err);
}

void cmd_nul_preserved(RuleContext& ctx) {
  auto b = ctx.make();
  auto r = ctx.run(b, Shell{"printf 'a\\000b'; printf 'c\\000d' >&2"});
  EXPECT_EQ(r.out, std::string("a\0b", 3));
  EXPECT_EQ(r.err, std::string("c\0d", 3));
}

void cmd_streams_separate(RuleContext& ctx) {
  auto b = ctx.make();
  auto r = ctx.run(
      b, Shell{"i=1; while [ $i -le 300 ]; do printf 'out%d\\n' $i; printf 'err%d\\n' $i >&2; "
               "i=$((i+1)); done"});
  std::string out;
  std::string err;
  for (int i = 1; i <= 300; ++i) {
    out += "out" + std::to_string(i) + "\n";
    err += "err" + std::to_string(i) + "\n";
  }
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(r.out == out) << "stdout: " << diff_summary(out, r.out);
  EXPECT_TRUE(r.err == err) << "stderr: " << diff_summary(err, r.err);
}

void cmd_output_complete(RuleContext& ctx) {
  auto b = ctx.make();
  for (std::size_t size : {std::size_t{9 * 1024}, std::size_t{5 * 1024 * 1024}}) {
    auto r = ctx.run(b, Shell{seq_cmd(1, size) + "; " + seq_cmd(7, size) + " >&2"});
    const std::string out = seq_bytes(1, size);
    const std::string err = seq_bytes(7, size);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_TRUE(r.out == out) << size << " bytes on stdout: " << diff_summary(out, r.out);
    EXPECT_TRUE(r.err == err) << size << " bytes on stderr: " << diff_summary(err, r.err);
  }
}

void cmd_output_limit(RuleContext& ctx) {
  auto b = ctx.make();
  const std::string dir = ctx.scratch(b);
  const std::string marker = dir + "/after-limit";
  const std::string gate = dir + "/gate";
  const std::size_t limit = workspace::kOutputLimitBytes;
  const std::size_t head = workspace::kOutputHeadBytes;
  // stderr first (so its head is complete), then one byte over the limit on
  // stdout, then a later step that waits for the gate.
  auto over = run_timed(ctx, b,
                        Shell{seq_cmd(5, 100 * 1024) + " >&2; " + seq_cmd(1, limit + 1) + "; " +
                              wait_for_gate(gate) + "; touch " + sh_quote(marker)},
                        {});
  try {
    if (over.error) std::rethrow_exception(over.error);
    ADD_FAILURE() << "10 MiB + 1 byte on stdout: " << describe(over)
                  << " (a truncated success is never allowed)";
  } catch (const WorkspaceOutputLimitError& e) {
    EXPECT_EQ(e.limit(), limit) << "limit() must be 10 MiB";
    const std::string out_head = seq_bytes(1, head);
    const std::string err_head = seq_bytes(5, head);
    EXPECT_TRUE(e.out_head() == out_head) << "out_head() must be the first 64 KiB of stdout: "
                                          << diff_summary(out_head, e.out_head());
    EXPECT_TRUE(e.err_head() == err_head) << "err_head() must be the first 64 KiB of stderr: "
                                          << diff_summary(err_head, e.err_head());
  } catch (const std::exception& e) {
    ADD_FAILURE() << "10 MiB + 1 byte: expected WorkspaceOutputLimitError, got "
                  << one_line(describe_throw([&] { throw; }));
  }
  // The process group was stopped: the command's later step never happens.
  open_gate(ctx, b, gate);
  EXPECT_FALSE(ctx.path_exists(b, marker))
      << "the command kept running after the output limit (its process group was not stopped)";
  // Over the limit on stderr alone.
  auto over_err = run_timed(ctx, b, Shell{seq_cmd(3, limit + 1) + " >&2"}, {});
  try {
    if (over_err.error) std::rethrow_exception(over_err.error);
    ADD_FAILURE() << "10 MiB + 1 byte on stderr: " << describe(over_err);
  } catch (const WorkspaceOutputLimitError& e) {
    EXPECT_EQ(e.limit(), limit);
    EXPECT_TRUE(e.err_head() == seq_bytes(3, head))
        << "err_head(): " << diff_summary(seq_bytes(3, head), e.err_head());
  } catch (const std::exception&) {
    ADD_FAILURE() << "10 MiB + 1 byte on stderr: expected WorkspaceOutputLimitError, got "
                  << one_line(describe_throw([&] { throw; }));
  }
  // Exactly the limit is not over it.
  auto exact = run_timed(ctx, b, Shell{seq_cmd(1, limit)}, {});
  ASSERT_TRUE(exact.result.has_value())
      << "exactly 10 MiB must succeed, got " << one_line(describe(exact));
  EXPECT_EQ(exact.result->exit_code, 0);
  EXPECT_TRUE(exact.result->out == seq_bytes(1, limit))
      << "exactly 10 MiB: " << diff_summary(seq_bytes(1, limit), exact.result->out);
}

void cmd_background_child_does_not_hold(RuleContext& ctx) {
  auto b = ctx.make();
  const std::string dir = ctx.scratch(b);
  const std::string gate = dir + "/gate";
  // Two children hold stdout: one in the command's process group, and one in
  // a session of its own (`setsid`, as a daemon starts), which a backend that
  // waits for the group's end would not see. Each waits for a gate that the
  // rule opens only after run() returned, then makes its marker. A run() that
  // waited for the stream finds the marker there (a child stops waiting after
  // 20 s and makes it anyway); one that returned when the command exited does
  // not, however long that took on a loaded machine: no clock decides.
  const auto child = [&](const std::string& marker) {
    return "i=0; while [ ! -e " + sh_quote(gate) +
           " ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done; touch " + sh_quote(marker);
  };
  const std::string in_group = dir + "/child-done";
  const std::string in_session = dir + "/session-child-done";
  auto r = run_timed(ctx, b,
                     Shell{"(" + child(in_group) + ") & setsid sh -c " +
                           sh_quote(child(in_session)) + " & printf parent-done"},
                     {}, Seconds(90));
  ASSERT_TRUE(r.result.has_value()) << one_line(describe(r));
  EXPECT_EQ(r.result->out, "parent-done");
  EXPECT_EQ(r.result->exit_code, 0);
  EXPECT_FALSE(ctx.path_exists(b, in_group))
      << "run() waited for the background child holding stdout (it returned after " << r.seconds
      << " s, when the child had ended)";
  EXPECT_FALSE(ctx.path_exists(b, in_session))
      << "run() waited for the child in a session of its own (setsid) holding stdout (it "
         "returned after "
      << r.seconds << " s, when the child had ended)";
  ctx.run(b, Shell{"touch " + sh_quote(gate)});
  EXPECT_TRUE(wait_until(
      [&] { return ctx.path_exists(b, in_group) && ctx.path_exists(b, in_session); }, Seconds(20)))
      << "the background children did not keep running";
}

void cmd_timeout(RuleContext& ctx) {
  auto b = ctx.make();
  RunOptions options;
  options.timeout = Seconds(1.5);
  ctx.note_wait(*options.timeout);
  auto r = run_timed(ctx, b, Shell{"sleep 30; printf late"}, options, Seconds(60));
  try {
    if (r.error) std::rethrow_exception(r.error);
    ADD_FAILURE() << "a command over its timeout " << describe(r);
  } catch (const WorkspaceTimeoutError& e) {
    EXPECT_NEAR(e.timeout().count(), 1.5, 1e-6) << "timeout() must be the enforced timeout";
    EXPECT_GE(r.seconds, 1.4) << "raised before the deadline";
    EXPECT_LT(r.seconds, 1.5 + 5.0) << "raised more than 5 s after the deadline";
  } catch (const std::exception&) {
    ADD_FAILURE() << "expected WorkspaceTimeoutError, got "
                  << one_line(describe_throw([&] { throw; }));
  }
  // A command within its timeout is unaffected.
  RunOptions generous;
  generous.timeout = Seconds(30);
  auto ok = run_timed(ctx, b, Shell{"printf fine"}, generous);
  ASSERT_TRUE(ok.result.has_value()) << one_line(describe(ok));
  EXPECT_EQ(ok.result->out, "fine");
}

void cmd_timeout_partial_output(RuleContext& ctx) {
  auto b = ctx.make();
  RunOptions options;
  options.timeout = Seconds(2);
  ctx.note_wait(*options.timeout);
  auto r = run_timed(ctx, b, Shell{"printf before; printf before-err >&2; sleep 30; printf after"},
                     options, Seconds(60));
  try {
    if (r.error) std::rethrow_exception(r.error);
    ADD_FAILURE() << "a command over its timeout " << describe(r);
  } catch (const WorkspaceTimeoutError& e) {
    EXPECT_EQ(e.out(), "before");
    EXPECT_EQ(e.err(), "before-err");
  } catch (const std::exception&) {
    ADD_FAILURE() << "expected WorkspaceTimeoutError, got "
                  << one_line(describe_throw([&] { throw; }));
  }
}

void cmd_timeout_stops_group(RuleContext& ctx) {
  auto b = ctx.make();
  const std::string dir = ctx.scratch(b);
  const std::string child = dir + "/child-later";
  const std::string parent = dir + "/parent-later";
  const std::string gate = dir + "/gate";
  RunOptions options;
  options.timeout = Seconds(1);
  ctx.note_wait(*options.timeout);
  auto r = run_timed(ctx, b,
                     Shell{"sh -c " + sh_quote(wait_for_gate(gate) + "; touch " + sh_quote(child)) +
                           "; touch " + sh_quote(parent)},
                     options, Seconds(60));
  EXPECT_FALSE(r.result.has_value())
      << "the command was not stopped by its timeout: " << describe(r);
  // A foreground child still polling the gate would make its marker, and the
  // command its own after it.
  open_gate(ctx, b, gate);
  EXPECT_FALSE(ctx.path_exists(b, child)) << "a foreground child survived the timeout";
  EXPECT_FALSE(ctx.path_exists(b, parent)) << "the command survived the timeout";
}

void cmd_timeout_invalid(RuleContext& ctx) {
  auto b = ctx.make();
  const std::string dir = ctx.scratch(b);
  const double values[] = {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(),
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity()};
  int index = 0;
  for (double value : values) {
    const std::string marker = dir + "/ran-" + std::to_string(index++);
    RunOptions options;
    options.timeout = Seconds(value);
    const std::string got = expect_throw<std::invalid_argument>(
        [&] { ctx.run(b, Shell{"touch " + sh_quote(marker)}, options, Seconds(30)); });
    EXPECT_EQ(got, "") << "timeout " << value << " should be std::invalid_argument, got "
                       << one_line(got);
    EXPECT_FALSE(ctx.path_exists(b, marker)) << "the command ran with timeout " << value;
  }
}

void cmd_cancellation(RuleContext& ctx) {
  auto b = ctx.make();
  const std::string dir = ctx.scratch(b);
  const std::string started = dir + "/started";
  const std::string later = dir + "/later";
  const std::string gate = dir + "/gate";
  const std::string child = wait_for_gate(gate) + "; touch " + sh_quote(later);
  auto* c = &ctx.cmd(*b);
  auto source = std::make_shared<std::stop_source>();
  auto outcome = std::make_shared<std::string>("still running");
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::thread([b, c, source, started, child, outcome, done] {
    std::string result;
    try {
      RunOptions options;
      options.stop = source->get_token();
      auto r =
          c->run(Shell{"touch " + sh_quote(started) + "; sh -c " + sh_quote(child) + "; sleep 30"},
                 options);
      result = "returned exit " + std::to_string(r.exit_code);
    } catch (const WorkspaceCancelledError&) {
      result = "";
    } catch (...) {  // whatever it is: a throw out of this thread would end the runner
      result = describe_throw([&] { throw; });
    }
    *outcome = result;
    done->store(true);
  }).detach();
  ASSERT_TRUE(wait_until([&] { return done->load() || ctx.path_exists(b, started); }, Seconds(30)))
      << "the command did not start within 30 s";
  const auto stop_time = Clock::now();
  source->request_stop();
  ASSERT_TRUE(wait_until([&] { return done->load(); }, Seconds(10)))
      << "run() did not return within 10 s of the stop request";
  EXPECT_EQ(*outcome, "") << "expected WorkspaceCancelledError, got " << one_line(*outcome);
  // The group has "a few seconds" from the stop request: 3 s, then the gate.
  ctx.note_wait(Seconds(3));
  std::this_thread::sleep_until(stop_time + std::chrono::seconds(3));
  open_gate(ctx, b, gate);
  EXPECT_FALSE(ctx.path_exists(b, later))
      << "the foreground process group kept running after cancellation";
}

void cmd_env_added(RuleContext& ctx) {
  auto b = ctx.make();
  const std::string name = "LC_ADDED_" + random_hex(6);
  const std::string value = "value with spaces, $dollar, 'quotes' and \xC3\xA9";
  RunOptions options;
  options.env[name] = value;
  options.env["LC_SECOND"] = "2";
  auto r = ctx.run(b, Shell{"printf '%s|%s' \"$" + name + "\" \"$LC_SECOND\""}, options);
  EXPECT_EQ(r.out, value + "|2");
  auto without = ctx.run(b, Shell{"printf '%s' \"${" + name + "-unset}\""});
  EXPECT_EQ(without.out, "unset") << "a per-call variable leaked into a later command";
}

void cmd_env_not_inherited(RuleContext& ctx) {
  auto b = ctx.make();
  const auto [canary_name, canary_value] = host_canary();
  auto r = ctx.run(b, Argv{{"env"}});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.find(canary_name), std::string::npos)
      << "the host variable " << canary_name << " is visible to commands";
  EXPECT_EQ(r.out.find(canary_value), std::string::npos) << "the host canary's value is visible";
  for (const auto& secret : ctx.session().secrets()) {
    if (secret.empty()) continue;
    EXPECT_EQ(r.out.find(secret), std::string::npos) << "the API key is visible to commands";
  }
  if (const char* key = std::getenv("LIZARD_API_KEY"); key != nullptr && *key != '\0') {
    EXPECT_EQ(r.out.find(key), std::string::npos) << "the host's LIZARD_API_KEY is visible";
  }
  EXPECT_EQ(r.out.find("LIZARD_API_KEY="), std::string::npos)
      << "LIZARD_API_KEY is in the command's environment";
}

void cmd_starts_in_working_dir(RuleContext& ctx) {
  auto b = ctx.make();
  const std::string wd = b->working_dir();
  auto r = ctx.run(b, Shell{"pwd -P"});
  EXPECT_EQ(r.out, wd + "\n");
  const std::string name = "lc-start-" + random_hex(8);
  ctx.sh(b, "printf here > " + sh_quote(wd + "/" + name));
  auto rel = ctx.run(b, Argv{{"cat", name}});
  EXPECT_EQ(rel.out, "here") << "a relative path does not resolve from working_dir()";
  ctx.run(b, Argv{{"rm", "-f", "--", wd + "/" + name}});
}

void cmd_concurrent(RuleContext& ctx) {
  auto b = ctx.make();
  auto* c = &ctx.cmd(*b);
  constexpr int kRuns = 16;
  std::vector<std::string> problems(kRuns);
  std::barrier start(kRuns);
  ctx.note_wait(Seconds(1));  // every command sleeps 1 s, all at once
  std::vector<std::thread> threads;
  for (int i = 0; i < kRuns; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      try {
        const std::string n = std::to_string(i);
        auto r = c->run(Shell{"printf out-" + n + "; sleep 1; printf err-" + n + " >&2; exit " +
                              std::to_string(i + 10)});
        if (r.out != "out-" + n || r.err != "err-" + n || r.exit_code != i + 10) {
          problems[i] = "got (" + std::to_string(r.exit_code) + ", " + one_line(r.out, 40) + ", " +
                        one_line(r.err, 40) + ")";
        }
      } catch (...) {  // whatever it is: a throw out of this thread would end the runner
        problems[i] = "threw: " + describe_throw([] { throw; });
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < kRuns; ++i) EXPECT_EQ(problems[i], "") << "command " << i;
}

}  // namespace lizard::conformance::internal
