// The file rules (fs.*) about errors and special files: the errc of each
// refusal, permissions, FIFOs, removing the working directory, relative paths.
// The rules about contents and listings are in fs_rules.cc.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "rule_bodies.h"
#include "rule_context.h"

namespace lizard::conformance::internal {

void fs_missing_not_found(RuleContext& ctx) {
  auto b = ctx.make();
  auto* f = &ctx.fs(*b);
  const std::string dir = ctx.scratch(b);
  const std::string missing = dir + "/missing";
  const auto enoent = std::errc::no_such_file_or_directory;
  LC_EXPECT_ERRC(f->read_bytes(missing), enoent);
  LC_EXPECT_ERRC(f->stat(missing), enoent);
  LC_EXPECT_ERRC(f->list_dir(missing), enoent);
  LC_EXPECT_ERRC(f->remove(missing), enoent);
  LC_EXPECT_ERRC(f->read_bytes(missing + "/deeper"), enoent);
}

void fs_read_dir_is_a_directory(RuleContext& ctx) {
  auto b = ctx.make();
  auto* f = &ctx.fs(*b);
  const std::string dir = ctx.scratch(b);
  LC_EXPECT_ERRC(f->read_bytes(dir), std::errc::is_a_directory);
}

void fs_write_dir_is_a_directory(RuleContext& ctx) {
  auto b = ctx.make();
  auto* f = &ctx.fs(*b);
  const std::string dir = ctx.scratch(b);
  f->make_dir(dir + "/d");
  f->write_bytes(dir + "/d/inside", "i");
  LC_EXPECT_ERRC(f->write_bytes(dir + "/d", "x"), std::errc::is_a_directory);
  EXPECT_TRUE(f->stat(dir + "/d").is_dir) << "the directory was replaced";
  EXPECT_EQ(f->read_bytes(dir + "/d/inside"), "i");
}

void fs_list_file_not_a_directory(RuleContext& ctx) {
  auto b = ctx.make();
  auto* f = &ctx.fs(*b);
  const std::string dir = ctx.scratch(b);
  f->write_bytes(dir + "/file", "x");
  LC_EXPECT_ERRC(f->list_dir(dir + "/file"), std::errc::not_a_directory);
}

void fs_file_as_parent_not_a_directory(RuleContext& ctx) {
  auto b = ctx.make();
  auto* f = &ctx.fs(*b);
  const std::string dir = ctx.scratch(b);
  f->write_bytes(dir + "/file", "x");
  const std::string child = dir + "/file/child";
  LC_EXPECT_ERRC(f->write_bytes(child, "y"), std::errc::not_a_directory);
  LC_EXPECT_ERRC(f->read_bytes(child), std::errc::not_a_directory);
  LC_EXPECT_ERRC(f->stat(child), std::errc::not_a_directory);
  LC_EXPECT_ERRC(f->list_dir(child), std::errc::not_a_directory);
  EXPECT_EQ(f->read_bytes(dir + "/file"), "x") << "the file in the way was changed";
}

void fs_make_dir_over_file_exists(RuleContext& ctx) {
  auto b = ctx.make();
  auto* f = &ctx.fs(*b);
  const std::string dir = ctx.scratch(b);
  f->write_bytes(dir + "/file", "keep");
  LC_EXPECT_ERRC(f->make_dir(dir + "/file"), std::errc::file_exists);
  EXPECT_EQ(f->read_bytes(dir + "/file"), "keep") << "the file was changed";
}

void fs_permission_denied(RuleContext& ctx) {
  auto b = ctx.make();
  if (ctx.session().deviations().commands_run_as_root) {
    GTEST_SKIP() << "commands run as root (declared deviation): chmod 000 does not keep root out";
  }
  auto uid = ctx.run(b, Argv{{"id", "-u"}});
  if (uid.out == "0\n") {
    FAIL() << "commands run as root (id -u prints 0) but the factory does not declare the "
              "commands_run_as_root deviation";
  }
  auto* f = &ctx.fs(*b);
  const std::string dir = ctx.scratch(b);
  const std::string path = dir + "/locked";
  f->write_bytes(path, "secret");
  ctx.sh(b, "chmod 000 " + sh_quote(path));
  LC_EXPECT_ERRC(f->read_bytes(path), std::errc::permission_denied);
  LC_EXPECT_ERRC(f->write_bytes(path, "changed"), std::errc::permission_denied);
  ctx.sh(b, "chmod 644 " + sh_quote(path));
  EXPECT_EQ(f->read_bytes(path), "secret") << "a refused write changed the file";
}

void fs_fifo_read_does_not_hang(RuleContext& ctx) {
  auto b = ctx.make();
  auto* f = &ctx.fs(*b);
  const std::string dir = ctx.scratch(b);
  const std::string fifo = dir + "/fifo";
  ctx.sh(b, "mkfifo " + sh_quote(fifo));
  auto outcome = std::make_shared<std::string>();
  const bool finished = run_with_deadline(
      [keep = b, f, fifo, outcome] {
        try {
          std::string data = f->read_bytes(fifo);
          *outcome = "returned " + std::to_string(data.size()) + " bytes";
        } catch (const std::exception&) {
          *outcome = "";
        } catch (...) {  // a throw out of this thread would end the runner
          *outcome = "threw " + describe_throw([] { throw; });
        }
      },
      Seconds(10));
  if (!finished) {
    ctx.note_abandoned();
    // Release the blocked reader so its thread can end.
    try {
      ctx.run(b, Shell{"printf x > " + sh_quote(fifo)}, {}, Seconds(10));
    } catch (...) {
    }
    FAIL() << "read_bytes of a FIFO with no writer did not fail within 10 s";
  }
  EXPECT_EQ(*outcome, "") << "read_bytes of a FIFO with no writer must fail, but it " << *outcome;
}

void fs_remove_refuses_working_dir(RuleContext& ctx) {
  auto b = ctx.make();
  auto* f = &ctx.fs(*b);
  const std::string wd = b->working_dir();
  const std::string marker = wd + "/lc-refuse-" + random_hex(8);
  f->write_bytes(marker, "m");
  // Nearest first, and stop at the first path not refused: a backend that
  // removes one of these must not get the chance to remove a wider one.
  std::vector<std::string> paths = {wd, wd + "/.", wd + "/", marker + "/.."};
  for (std::string p = wd; p != "/";) {
    p = p.substr(0, p.find_last_of('/'));
    if (p.empty()) p = "/";
    paths.push_back(p);
  }
  paths.push_back("/");
  paths.push_back("//");
  for (const auto& path : paths) {
    const std::string got = expect_throw<std::invalid_argument>([&] { f->remove(path); });
    if (!got.empty()) {
      ADD_FAILURE() << "remove(\"" << path << "\") should be std::invalid_argument, got "
                    << one_line(got);
      break;
    }
  }
  EXPECT_TRUE(f->exists(wd)) << "the working directory was removed";
  EXPECT_TRUE(f->exists(marker)) << "a file in the working directory was removed";
  try {
    f->remove(marker);
  } catch (...) {
  }
}

void fs_relative_path_rejected(RuleContext& ctx) {
  auto b = ctx.make();
  auto* f = &ctx.fs(*b);
  const std::string rel = "lc-relative-" + random_hex(6);
  struct Case {
    const char* what;
    std::function<void()> call;
  };
  const std::vector<Case> cases = {
      {"read_bytes", [&] { f->read_bytes(rel); }},
      {"write_bytes", [&] { f->write_bytes(rel, "x"); }},
      {"stat", [&] { f->stat(rel); }},
      {"list_dir", [&] { f->list_dir(rel); }},
      {"make_dir", [&] { f->make_dir(rel + "-dir"); }},
      {"remove", [&] { f->remove(rel); }},
      {"exists", [&] { f->exists(rel); }},
      {"read_bytes(\"./x\")", [&] { f->read_bytes("./" + rel); }},
      {"write_bytes(\"\")", [&] { f->write_bytes("", "x"); }},
  };
  for (const auto& c : cases) {
    const std::string got = expect_throw<std::invalid_argument>(c.call);
    EXPECT_EQ(got, "") << c.what << " of a relative path should be std::invalid_argument, got "
                       << one_line(got);
  }
  if (auto* r = b->realpath_support()) {
    std::string got = describe_throw([&] { r->realpath(rel); });
    EXPECT_NE(got.find("invalid_argument"), std::string::npos)
        << "realpath of a relative path: " << one_line(got);
  }
  EXPECT_FALSE(f->exists(b->working_dir() + "/" + rel)) << "a relative write created a file";
  EXPECT_FALSE(f->exists(b->working_dir() + "/" + rel + "-dir")) << "a relative make_dir ran";
}

}  // namespace lizard::conformance::internal
