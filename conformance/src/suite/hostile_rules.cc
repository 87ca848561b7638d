// Rules about what commands and callers really do to a backend: the exact
// environment, commands that turn on the backend's own processes or files,
// arguments the kernel refuses, names that look like error messages, and
// paths a backend cannot carry.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "lizard/workspace/utf8.h"
#include "lizard_support.h"
#include "rule_bodies.h"
#include "rule_context.h"

namespace lizard::conformance::internal {

using workspace::WorkspaceError;

namespace {

// The environment a command sees, as NAME -> value, plus the names that
// appeared more than once. `exact` is false when only `env -0` could read it:
// its output came back as UTF-8, so invalid bytes are U+FFFD there.
struct SeenEnvironment {
  std::map<std::string, std::string> vars;
  std::vector<std::string> repeated;
  bool exact = false;
};

std::string hex_decode(const std::string& text) {
  std::string out;
  int high = -1;
  for (char c : text) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) continue;
    const int v = std::isdigit(static_cast<unsigned char>(c))
                      ? c - '0'
                      : std::tolower(static_cast<unsigned char>(c)) - 'a' + 10;
    if (high < 0) {
      high = v;
    } else {
      out += static_cast<char>(high * 16 + v);
      high = -1;
    }
  }
  return out;
}

// Runs a program with `env` that prints its own environment block, read with
// no shell in between (a shell would drop names that are not identifiers and
// reset IFS): od of /proc/self/environ where there is one, else env -0.
SeenEnvironment seen_environment(RuleContext& ctx, const BackendPtr& b,
                                 const std::map<std::string, std::string>& env) {
  RunOptions options;
  options.env = env;
  SeenEnvironment seen;
  std::string block;
  auto od = ctx.run(b, Argv{{"od", "-An", "-tx1", "-v", "/proc/self/environ"}}, options);
  if (od.exit_code == 0 && !od.out.empty()) {
    block = hex_decode(od.out);
    seen.exact = true;
  } else {
    auto r = ctx.run(b, Argv{{"env", "-0"}}, options);
    if (r.exit_code != 0) {
      throw RuleAbort("neither od of /proc/self/environ nor env -0 could print the environment: " +
                      one_line(r.err));
    }
    block = r.out;
  }
  std::size_t start = 0;
  while (start < block.size()) {
    std::size_t end = block.find('\0', start);
    if (end == std::string::npos) end = block.size();
    const std::string entry = block.substr(start, end - start);
    start = end + 1;
    const auto eq = entry.find('=');
    if (entry.empty() || eq == std::string::npos) continue;
    const std::string name = entry.substr(0, eq);
    if (seen.vars.count(name) != 0) seen.repeated.push_back(name);
    seen.vars[name] = entry.substr(eq + 1);
  }
  return seen;
}

std::string printable(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      static const char* kHex = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// Starts a command with `env` that would leave `marker` behind. "" when it
// raised std::invalid_argument and the marker is absent; "ran" when it ran;
// otherwise what went wrong.
std::string refused_or_ran(RuleContext& ctx, const BackendPtr& b,
                           const std::map<std::string, std::string>& env,
                           const std::string& marker) {
  RunOptions options;
  options.env = env;
  try {
    auto r = ctx.run(b, Argv{{"touch", marker}}, options);
    return r.exit_code == 0 ? "ran"
                            : "exit " + std::to_string(r.exit_code) + ": " + one_line(r.err);
  } catch (const std::invalid_argument&) {
    if (ctx.path_exists(b, marker)) return "std::invalid_argument, but the command ran";
    return "";
  } catch (const RuleAbort&) {
    throw;
  } catch (const std::exception&) {
    return describe_throw([] { throw; });
  }
}

}  // namespace

void cmd_env_exact(RuleContext& ctx) {
  auto b = ctx.make();
  const std::string dir = ctx.scratch(b);
  // Names a shell would not pass on, names that change how shells work, names
  // a backend's own helper might use, and values of every awkward shape.
  const std::map<std::string, std::string> env = {
      {"IFS", ":x"},
      {"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/opt/lc exact/bin"},
      {"HOME", dir + "/a home"},
      {"CDPATH", "/"},
      {"ENV", dir + "/no-such-rc"},
      {"BASH_ENV", dir + "/no-such-rc"},
      {"A B", "a space in the name"},
      {"1X", "a leading digit"},
      {"a-b.c", "punctuation in the name"},
      {"\xc3\xa9t\xc3\xa9", "a UTF-8 name"},
      {"__lz_0", "a helper's variable"},
      {"__lz_err", "another"},
      {"_", "underscore"},
      {"LC_QUOTES", "'\"`$(id)` \\ ; && | $HOME ${IFS}"},
      {"LC_NEWLINES", "one\ntwo\n"},
      {"LC_EMPTY", ""},
      {"LC_EQUALS", "a=b==c"},
      {"LC_DASH", "-n"},
      {"LC_CONTROL", std::string("\x01\x1b[31m\t\r") + "end"},
      {"LC_GLOB", "* ? [a-z]"},
      {"LC_PERCENT", "%s%n%%"},
      {"LC_SPACES", "  leading and trailing  "},
  };
  const SeenEnvironment seen = seen_environment(ctx, b, env);
  for (const auto& [name, value] : env) {
    auto it = seen.vars.find(name);
    if (it == seen.vars.end()) {
      ADD_FAILURE() << "the variable \"" << printable(name) << "\" did not arrive";
      continue;
    }
    EXPECT_EQ(printable(it->second), printable(value))
        << "the variable \"" << printable(name) << "\" arrived altered";
  }
  EXPECT_TRUE(seen.repeated.empty()) << "variables present twice: " << seen.repeated.size();

  // Bytes that are not UTF-8, in a value and in a name: carried exactly, or
  // std::invalid_argument before anything runs.
  const std::vector<std::pair<std::string, std::string>> bytes = {
      {"LC_BYTES", "\xff\xfe-\x80"}, {"LC_\xff", "a name that is not UTF-8"}};
  for (const auto& [name, value] : bytes) {
    const std::string marker = dir + "/ran-" + random_hex(6);
    const std::string got = refused_or_ran(ctx, b, {{name, value}}, marker);
    if (got != "ran") {
      EXPECT_EQ(got, "") << "\"" << printable(name) << "\" = \"" << printable(value)
                         << "\" must be carried exactly or be std::invalid_argument";
      continue;
    }
    const SeenEnvironment one = seen_environment(ctx, b, {{name, value}});
    const std::string want_name = one.exact ? name : workspace::repair_utf8(name);
    const std::string want_value = one.exact ? value : workspace::repair_utf8(value);
    auto it = one.vars.find(want_name);
    if (it == one.vars.end()) {
      ADD_FAILURE() << "\"" << printable(name) << "\" ran, but did not arrive";
    } else {
      EXPECT_EQ(printable(it->second), printable(want_value))
          << "\"" << printable(name) << "\" arrived altered";
    }
  }

  // What no environment can hold: std::invalid_argument, and nothing runs.
  const std::vector<std::pair<std::string, std::string>> invalid = {
      {"", "an empty name"},
      {"A=B", "a name with ="},
      {std::string("N\0UL", 4), "a name with NUL"},
      {"LC_NUL", std::string("a\0b", 3)}};
  for (const auto& [name, value] : invalid) {
    const std::string marker = dir + "/ran-" + random_hex(6);
    EXPECT_EQ(refused_or_ran(ctx, b, {{name, value}}, marker), "")
        << "\"" << printable(name) << "\" = \"" << printable(value)
        << "\" must be std::invalid_argument before anything runs";
  }
}

void cmd_command_cannot_break_the_backend(RuleContext& ctx) {
  auto b = ctx.make();
  ctx.run(b, Argv{{"true"}});
  if (ctx.run(b, Shell{"command -v pkill"}).exit_code != 0) {
    GTEST_SKIP() << "the environment has no pkill";
  }
  // A fragment unique to this rule, so nothing else on the machine matches.
  // The command's own shell holds its text (sh -c TEXT) and dies by SIGTERM,
  // exactly as a local command would: 143 and no output.
  const std::string fragment = "lc-own-text-" + random_hex(16);
  RunOptions options;
  options.timeout = Seconds(60);
  auto r = ctx.run(b, Shell{"pkill -f '" + fragment + "'; echo survived"}, options, Seconds(75));
  EXPECT_EQ(r.exit_code, 143) << "the command's own shell should end by SIGTERM (out \""
                              << one_line(r.out) << "\", err \"" << one_line(r.err) << "\")";
  EXPECT_EQ(r.out, "") << "the command's shell should not have survived";
  auto after = ctx.run(b, Argv{{"echo", "after"}});
  EXPECT_EQ(after.out, "after\n") << "the next command";

  if (!ctx.session().deviations().commands_have_own_filesystem) return;
  // Commands with a file system of their own: one that empties /tmp (dot
  // files too) while another command runs gets its own result, and so does
  // the other.
  ctx.note_wait(Seconds(2));
  auto other = std::async(std::launch::async,
                          [&ctx, b] { return ctx.run(b, Shell{"sleep 2; echo other"}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto cleaned = ctx.run(
      b, Shell{"find /tmp -mindepth 1 -delete 2>/dev/null; rm -rf /tmp/* /tmp/.[!.]* /tmp/..?* "
               "2>/dev/null; echo cleaned"});
  EXPECT_EQ(cleaned.exit_code, 0) << one_line(cleaned.err);
  EXPECT_EQ(cleaned.out, "cleaned\n");
  auto o = other.get();
  EXPECT_EQ(o.exit_code, 0) << one_line(o.err);
  EXPECT_EQ(o.out, "other\n") << "a command running while /tmp was emptied";
  auto last = ctx.run(b, Argv{{"echo", "after"}});
  EXPECT_EQ(last.out, "after\n") << "the next command after /tmp was emptied";
}

void cmd_argument_list_too_long(RuleContext& ctx) {
  auto b = ctx.make();
  ctx.run(b, Argv{{"true"}});
  struct Case {
    std::string what;
    Argv argv;
    std::map<std::string, std::string> env;
  };
  const std::vector<Case> cases = {
      {"an argv item of 256 KiB", Argv{{"true", std::string(256 * 1024, 'a')}}, {}},
      {"4 MiB of env", Argv{{"true"}}, {{"LC_BIG", std::string(4 * 1024 * 1024, 'b')}}},
  };
  auto* platform = ctx.platform();
  for (const auto& c : cases) {
    if (platform != nullptr) platform->clear_requests();
    RunOptions options;
    options.env = c.env;
    const auto t0 = Clock::now();
    std::string outcome;
    try {
      ctx.run(b, c.argv, options, Seconds(120));
      outcome = "ran";
    } catch (const WorkspaceError& e) {
      const std::string message = e.what();
      outcome = lower(message).find("argument list too long") != std::string::npos
                    ? ""
                    : describe_throw([] { throw; });
    } catch (const RuleAbort&) {
      throw;
    } catch (const std::exception&) {
      outcome = describe_throw([] { throw; });
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (outcome != "ran") {
      EXPECT_EQ(outcome, "") << c.what
                             << ": must run, or be a WorkspaceError saying the argument list is "
                                "too long";
    }
    EXPECT_LT(seconds, 20.0) << c.what << ": the answer must come at once";
    if (platform != nullptr) {
      int execs = 0;
      for (const auto& r : platform->requests()) {
        if (r.method == "POST" && r.path.find("/exec") != std::string::npos) ++execs;
      }
      EXPECT_LE(execs, 1) << c.what << ": the command was sent " << execs << " times";
    }
  }
  auto after = ctx.run(b, Argv{{"echo", "after"}});
  EXPECT_EQ(after.out, "after\n") << "the next command";
}

void fs_names_that_look_like_errors(RuleContext& ctx) {
  auto b = ctx.make();
  auto& f = ctx.fs(*b);
  const std::string dir = ctx.scratch(b);
  // A regular file named like EEXIST's message, used as a parent.
  const std::string file = dir + "/File exists";
  f.write_bytes(file, "a file");
  LC_EXPECT_ERRC(f.make_dir(file + "/sub"), std::errc::not_a_directory);
  LC_EXPECT_ERRC(f.write_bytes(file + "/sub/x", "x"), std::errc::not_a_directory);
  LC_EXPECT_ERRC(f.read_bytes(file + "/x"), std::errc::not_a_directory);
  LC_EXPECT_ERRC(f.make_dir(file), std::errc::file_exists);
  // Files named like other messages are ordinary files.
  for (const std::string name : {"No such file or directory", "Not a directory", "Is a directory",
                                 "Permission denied", "Argument list too long"}) {
    const std::string path = dir + "/" + name;
    f.write_bytes(path, name);
    EXPECT_EQ(f.read_bytes(path), name) << "reading a file named \"" << name << "\"";
    EXPECT_FALSE(f.stat(path).is_dir) << "a file named \"" << name << "\"";
  }
  const std::string named_dir = dir + "/No such file or directory.d";
  f.make_dir(named_dir);
  EXPECT_TRUE(f.stat(named_dir).is_dir);
  // A dangling link named like ELOOP's message.
  const std::string link = dir + "/Too many levels of symbolic links";
  ctx.sh(b, "ln -s " + sh_quote(dir + "/absent-" + random_hex(6)) + " " + sh_quote(link));
  LC_EXPECT_ERRC(f.read_bytes(link), std::errc::no_such_file_or_directory);
  // stat may describe the link itself (as a listing does) or say it is dangling.
  try {
    EXPECT_FALSE(f.stat(link).is_dir) << "stat of a dangling link";
  } catch (const std::filesystem::filesystem_error& e) {
    EXPECT_EQ(e.code(), std::make_error_code(std::errc::no_such_file_or_directory))
        << "stat of a dangling link: " << e.what();
  }
  LC_EXPECT_ERRC(f.list_dir(link), std::errc::no_such_file_or_directory);
}

void fs_unrepresentable_paths(RuleContext& ctx) {
  auto b = ctx.make();
  auto& f = ctx.fs(*b);
  const std::string dir = ctx.scratch(b);
  const std::string name = "lc-\xff\xfe-" + random_hex(4);
  const std::string path = dir + "/" + name;
  // The write decides whether this backend carries such paths.
  bool carried = true;
  try {
    f.write_bytes(path, "bytes");
  } catch (const std::invalid_argument&) {
    carried = false;
  } catch (const std::exception&) {
    ADD_FAILURE() << "writing to a path that is not UTF-8 must work or be std::invalid_argument, "
                     "got "
                  << one_line(describe_throw([] { throw; }));
    return;
  }
  struct Op {
    std::string what;
    std::function<void()> call;
  };
  const std::vector<Op> ops = {
      {"read_bytes", [&] { EXPECT_EQ(f.read_bytes(path), "bytes"); }},
      {"stat", [&] { EXPECT_EQ(f.stat(path).name, name); }},
      {"exists", [&] { EXPECT_TRUE(f.exists(path)); }},
      {"make_dir", [&] { f.make_dir(path + ".d/sub"); }},
      {"write_bytes", [&] { f.write_bytes(path + ".d/sub/f", "x"); }},
      {"list_dir",
       [&] {
         std::vector<std::string> names;
         for (const auto& e : f.list_dir(path + ".d")) names.push_back(e.name);
         EXPECT_EQ(names, std::vector<std::string>{"sub"});
       }},
      {"remove",
       [&] {
         f.remove(path + ".d");
         f.remove(path);
         EXPECT_FALSE(f.exists(path));
       }},
  };
  for (const auto& op : ops) {
    if (carried) {
      const std::string got = describe_throw(op.call);
      EXPECT_EQ(got, "none") << op.what << " of a path the backend carries: " << one_line(got);
    } else {
      const std::string got = expect_throw<std::invalid_argument>(op.call);
      EXPECT_EQ(got, "") << op.what
                         << " of a path that is not UTF-8 must be std::invalid_argument "
                            "like the write, got "
                         << one_line(got);
    }
  }
  if (carried) {
    // The listing shows the name byte for byte.
    f.write_bytes(path, "again");
    bool listed = false;
    for (const auto& e : f.list_dir(dir)) listed = listed || e.name == name;
    EXPECT_TRUE(listed) << "the listing does not show the name byte for byte";
  } else if (ctx.has(workspace::Capability::kRealpath)) {
    const std::string got = expect_throw<std::invalid_argument>([&] { ctx.rp(*b).realpath(path); });
    EXPECT_EQ(got, "") << "realpath of a path that is not UTF-8: " << one_line(got);
  }
}

}  // namespace lizard::conformance::internal
