// The file rules (fs.*) about contents and listings, and the realpath rules
// (path.*). The rules about errors and special files are in fs_error_rules.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "rule_bodies.h"
#include "rule_context.h"

namespace lizard::conformance::internal {

using workspace::SupportsFilesystem;

namespace {

std::string all_bytes() {
  std::string data;
  for (int i = 0; i < 256; ++i) data += static_cast<char>(i);
  return data;
}

// `size` bytes of SplitMix64's stream from `seed`: random enough that no
// transport can compress or dedupe them, and fast (64 MiB in a few tens of
// milliseconds, written once: no zeroing first).
std::string random_bytes(std::size_t size, std::uint64_t seed) {
  std::string data;
  data.reserve(size);
  std::uint64_t state = seed;
  char block[4096];
  while (data.size() < size) {
    for (std::size_t at = 0; at < sizeof block; at += 8) {
      std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
      z ^= z >> 31;
      std::memcpy(block + at, &z, 8);
    }
    data.append(block, std::min(sizeof block, size - data.size()));
  }
  return data;
}

// The files API of `b`, each call guarded so a hang fails the rule.
class Files {
 public:
  Files(RuleContext& ctx, BackendPtr b) : ctx_(ctx), b_(std::move(b)), f_(&ctx.fs(*b_)) {}

  std::string read(const std::string& path) {
    return call([path](SupportsFilesystem& f) { return f.read_bytes(path); }, Seconds(120),
                "read_bytes(" + path + ")");
  }
  void write(const std::string& path, const std::string& data) {
    write(path, std::make_shared<const std::string>(data));
  }
  // Without a copy of `data` (tens of MiB in fs.large-round-trip).
  void write(const std::string& path, std::shared_ptr<const std::string> data) {
    call([path, data](SupportsFilesystem& f) { f.write_bytes(path, *data); }, Seconds(120),
         "write_bytes(" + path + ")");
  }
  FileEntry stat(const std::string& path) {
    return call([path](SupportsFilesystem& f) { return f.stat(path); }, Seconds(60),
                "stat(" + path + ")");
  }
  std::vector<FileEntry> list(const std::string& path) {
    return call([path](SupportsFilesystem& f) { return f.list_dir(path); }, Seconds(60),
                "list_dir(" + path + ")");
  }
  void mkdir(const std::string& path) {
    call([path](SupportsFilesystem& f) { f.make_dir(path); }, Seconds(60),
         "make_dir(" + path + ")");
  }
  void remove(const std::string& path) {
    call([path](SupportsFilesystem& f) { f.remove(path); }, Seconds(60), "remove(" + path + ")");
  }
  bool exists(const std::string& path) {
    return call([path](SupportsFilesystem& f) { return f.exists(path); }, Seconds(60),
                "exists(" + path + ")");
  }

 private:
  // `op` on the files API, guarded by `limit`. What the call uses is owned by
  // it (the backend too), since a call that hangs is abandoned.
  template <typename Op, typename Result = std::invoke_result_t<Op, SupportsFilesystem&>>
  Result call(Op op, Seconds limit, const std::string& what) {
    if constexpr (std::is_void_v<Result>) {
      ctx_.guarded([keep = b_, f = f_, op] { op(*f); }, limit, what);
    } else {
      auto out = std::make_shared<Result>();
      ctx_.guarded([keep = b_, f = f_, op, out] { *out = op(*f); }, limit, what);
      // guarded() returned: the call is over, nothing else uses *out.
      return std::move(*out);
    }
  }

  RuleContext& ctx_;
  BackendPtr b_;
  SupportsFilesystem* f_;
};

std::string names_of(const std::vector<FileEntry>& entries) {
  std::string text;
  for (const auto& e : entries) text += (text.empty() ? "" : ", ") + e.name;
  return "[" + text + "]";
}

const FileEntry* find_entry(const std::vector<FileEntry>& entries, const std::string& name) {
  for (const auto& e : entries) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

}  // namespace

void fs_bytes_round_trip(RuleContext& ctx) {
  auto b = ctx.make();
  Files files(ctx, b);
  const std::string dir = ctx.scratch(b);
  const std::string path = dir + "/missing/parents/bytes.bin";
  const std::string data = all_bytes() + all_bytes();
  files.write(path, data);
  EXPECT_TRUE(files.read(path) == data) << "the 256 byte values did not round-trip";
  files.write(path, "x");
  EXPECT_EQ(files.read(path), "x") << "an overwrite must replace the content";
}

void fs_empty_file(RuleContext& ctx) {
  auto b = ctx.make();
  Files files(ctx, b);
  const std::string dir = ctx.scratch(b);
  const std::string path = dir + "/empty";
  files.write(path, "");
  EXPECT_EQ(files.read(path), "");
  auto entry = files.stat(path);
  EXPECT_FALSE(entry.is_dir);
  EXPECT_EQ(entry.size, std::optional<std::uint64_t>(0)) << "an empty file must stat with size 0";
  files.write(path, "content");
  files.write(path, "");
  EXPECT_EQ(files.read(path), "") << "overwriting with nothing must leave an empty file";
  EXPECT_EQ(files.stat(path).size, std::optional<std::uint64_t>(0));
}

void fs_large_round_trip(RuleContext& ctx) {
  auto b = ctx.make();
  Files files(ctx, b);
  const std::string dir = ctx.scratch(b);
  for (std::size_t mib : {8u, 64u}) {
    const auto data = std::make_shared<const std::string>(random_bytes(mib * 1024 * 1024, mib));
    const std::string path = dir + "/large-" + std::to_string(mib);
    files.write(path, data);
    const std::string back = files.read(path);
    EXPECT_EQ(back.size(), data->size()) << mib << " MiB";
    EXPECT_TRUE(back == *data) << mib << " MiB did not round-trip exactly";
    files.remove(path);
  }
}

void fs_exists(RuleContext& ctx) {
  auto b = ctx.make();
  Files files(ctx, b);
  const std::string dir = ctx.scratch(b);
  files.write(dir + "/file", "x");
  EXPECT_TRUE(files.exists(dir + "/file"));
  EXPECT_TRUE(files.exists(dir));
  EXPECT_FALSE(files.exists(dir + "/absent"));
  EXPECT_FALSE(files.exists(dir + "/absent/deeper"));
}

void fs_stat_and_list(RuleContext& ctx) {
  auto b = ctx.make();
  Files files(ctx, b);
  const std::string dir = ctx.scratch(b);
  files.write(dir + "/b.txt", "abc");
  files.write(dir + "/a.txt", "0123456789");
  files.write(dir + "/B", "1234567");
  files.write(dir + "/c/deep.txt", "deep");
  auto entry = files.stat(dir + "/a.txt");
  EXPECT_EQ(entry.name, "a.txt");
  EXPECT_EQ(entry.path, dir + "/a.txt");
  EXPECT_FALSE(entry.is_dir);
  EXPECT_EQ(entry.size, std::optional<std::uint64_t>(10));
  auto sub = files.stat(dir + "/c");
  EXPECT_EQ(sub.name, "c");
  EXPECT_EQ(sub.path, dir + "/c");
  EXPECT_TRUE(sub.is_dir);
  auto list = files.list(dir);
  ASSERT_EQ(list.size(), 4u) << "one level deep: " << names_of(list);
  // Byte order: "B" < "a.txt" < "b.txt" < "c".
  const std::vector<std::string> expected = {"B", "a.txt", "b.txt", "c"};
  const std::vector<std::uint64_t> sizes = {7, 10, 3, 0};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(list[i].name, expected[i]) << "not sorted by name: " << names_of(list);
    EXPECT_EQ(list[i].path, dir + "/" + expected[i]);
    EXPECT_EQ(list[i].is_dir, expected[i] == "c") << expected[i];
    if (expected[i] != "c") {
      EXPECT_EQ(list[i].size, std::optional<std::uint64_t>(sizes[i])) << expected[i];
    }
  }
}

void fs_make_dir(RuleContext& ctx) {
  auto b = ctx.make();
  Files files(ctx, b);
  const std::string dir = ctx.scratch(b);
  const std::string deep = dir + "/x/y/z";
  files.mkdir(deep);
  EXPECT_TRUE(files.exists(deep));
  EXPECT_TRUE(files.stat(deep).is_dir);
  EXPECT_TRUE(files.stat(dir + "/x/y").is_dir);
  files.write(deep + "/kept", "k");
  std::string second = describe_throw([&] { files.mkdir(deep); });
  EXPECT_EQ(second, "none") << "a second make_dir must be a no-op";
  EXPECT_EQ(files.read(deep + "/kept"), "k") << "a second make_dir changed the directory";
}

void fs_shared_with_commands(RuleContext& ctx) {
  auto b = ctx.make();
  Files files(ctx, b);
  const std::string dir = ctx.scratch(b);
  const std::string data = "from-files-" + random_hex(8) + "\n\xC3\xA9";
  files.write(dir + "/api", data);
  auto r = ctx.run(b, Argv{{"cat", dir + "/api"}});
  EXPECT_EQ(r.out, data) << "a command does not see what the files API wrote";
  ctx.sh(b, "printf 'from-command\\001\\377' > " + sh_quote(dir + "/cmd"));
  EXPECT_EQ(files.read(dir + "/cmd"), "from-command\x01\xff")
      << "the files API does not see what a command wrote";
}

void fs_symlink_loop_listing(RuleContext& ctx) {
  auto b = ctx.make();
  Files files(ctx, b);
  const std::string dir = ctx.scratch(b);
  ctx.sh(b, "cd " + sh_quote(dir) + " && ln -s loop loop && printf f > file && mkdir sub");
  auto list = files.list(dir);
  ASSERT_EQ(list.size(), 3u) << names_of(list);
  const FileEntry* loop = find_entry(list, "loop");
  ASSERT_NE(loop, nullptr) << names_of(list);
  EXPECT_FALSE(loop->is_dir) << "a looping link must list as a non-directory";
  EXPECT_EQ(loop->path, dir + "/loop");
  const FileEntry* file = find_entry(list, "file");
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(file->size, std::optional<std::uint64_t>(1));
  const FileEntry* sub = find_entry(list, "sub");
  ASSERT_NE(sub, nullptr);
  EXPECT_TRUE(sub->is_dir);
}

void fs_remove_file_or_tree(RuleContext& ctx) {
  auto b = ctx.make();
  Files files(ctx, b);
  const std::string dir = ctx.scratch(b);
  files.write(dir + "/file", "x");
  files.write(dir + "/keep", "k");
  files.remove(dir + "/file");
  EXPECT_FALSE(files.exists(dir + "/file"));
  files.write(dir + "/tree/a/b/leaf", "leaf");
  files.write(dir + "/tree/top", "top");
  files.mkdir(dir + "/tree/empty");
  files.remove(dir + "/tree");
  EXPECT_FALSE(files.exists(dir + "/tree"));
  EXPECT_EQ(files.read(dir + "/keep"), "k") << "remove touched a sibling";
}

void fs_remove_link_not_target(RuleContext& ctx) {
  auto b = ctx.make();
  Files files(ctx, b);
  const std::string dir = ctx.scratch(b);
  files.write(dir + "/target", "target-content");
  files.write(dir + "/tdir/inner", "inner");
  ctx.sh(b, "cd " + sh_quote(dir) + " && ln -s target link && ln -s tdir dlink");
  files.remove(dir + "/link");
  EXPECT_FALSE(files.exists(dir + "/link")) << "the link is still there";
  EXPECT_EQ(files.read(dir + "/target"), "target-content") << "removing a link hurt its target";
  files.remove(dir + "/dlink");
  EXPECT_EQ(ctx.run(b, Shell{"test -L " + sh_quote(dir + "/dlink")}).exit_code, 1)
      << "the link to a directory is still there";
  EXPECT_TRUE(files.exists(dir + "/tdir")) << "removing a link removed the target directory";
  EXPECT_EQ(files.read(dir + "/tdir/inner"), "inner")
      << "removing a link to a directory removed the directory's contents";
}

void fs_write_through_symlink(RuleContext& ctx) {
  auto b = ctx.make();
  Files files(ctx, b);
  const std::string dir = ctx.scratch(b);
  files.write(dir + "/target", "old");
  ctx.sh(b, "cd " + sh_quote(dir) + " && ln -s target link");
  files.write(dir + "/link", "new content");
  EXPECT_EQ(files.read(dir + "/target"), "new content") << "the write did not reach the target";
  EXPECT_EQ(ctx.run(b, Shell{"test -L " + sh_quote(dir + "/link")}).exit_code, 0)
      << "the link was replaced by a file";
}

void fs_write_keeps_mode(RuleContext& ctx) {
  auto b = ctx.make();
  Files files(ctx, b);
  const std::string dir = ctx.scratch(b);
  const std::string path = dir + "/script";
  files.write(path, "#!/bin/sh\necho one\n");
  ctx.sh(b, "chmod 751 " + sh_quote(path));
  files.write(path, "#!/bin/sh\necho two\n");
  EXPECT_EQ(ctx.sh(b, "stat -c %a " + sh_quote(path)), "751\n") << "the mode bits changed";
  auto r = ctx.run(b, Argv{{path}});
  EXPECT_EQ(r.out, "two\n") << "the overwritten script does not run with its new content";
}

void fs_odd_names(RuleContext& ctx) {
  auto b = ctx.make();
  Files files(ctx, b);
  const std::string dir = ctx.scratch(b);
  const std::vector<std::string> names = {
      "with space",     "quote'single",
      "quote\"double",  "$(touch pwned)",
      "`touch pwned2`", "new\nline",
      "-leading-dash",  "\xC3\xBCn\xC3\xAF\x63\xC3\xB6\x64\xC3\xA9-\xE6\x97\xA5\xE6\x9C\xAC",
      "semi;colon",     "back\\slash"};
  for (const auto& name : names) {
    const std::string path = dir + "/" + name;
    files.write(path, "content of " + name);
    EXPECT_EQ(files.read(path), "content of " + name) << one_line(name);
    auto entry = files.stat(path);
    EXPECT_EQ(entry.name, name);
    EXPECT_EQ(entry.path, path);
  }
  auto list = files.list(dir);
  EXPECT_EQ(list.size(), names.size()) << names_of(list);
  for (const auto& name : names) {
    const FileEntry* e = find_entry(list, name);
    EXPECT_NE(e, nullptr) << "not listed: " << one_line(name);
    if (e) {
      EXPECT_EQ(e->path, dir + "/" + name);
    }
  }
  for (const auto& name : names) {
    files.remove(dir + "/" + name);
    EXPECT_FALSE(files.exists(dir + "/" + name)) << "not removed: " << one_line(name);
  }
  EXPECT_TRUE(files.list(dir).empty()) << "left behind: " << names_of(files.list(dir));
  EXPECT_FALSE(files.exists(b->working_dir() + "/pwned")) << "a name was run by a shell";
}

void path_realpath(RuleContext& ctx) {
  auto b = ctx.make();
  auto* r = &ctx.rp(*b);
  const std::string s = ctx.scratch(b);
  ctx.sh(b, "cd " + sh_quote(s) +
                " && mkdir -p real/sub dir1 && ln -s real/sub rel && ln -s ../real dir1/up && "
                "ln -s " +
                sh_quote(s + "/real") + " abs && ln -s rel chain");
  auto resolve = [&](const std::string& path) {
    auto out = std::make_shared<std::string>();
    ctx.guarded([keep = b, r, path, out] { *out = r->realpath(path); }, Seconds(30),
                "realpath(" + path + ")");
    return *out;
  };
  EXPECT_EQ(resolve(s + "/rel"), s + "/real/sub")
      << "a relative target resolves from the link's dir";
  EXPECT_EQ(resolve(s + "/dir1/up"), s + "/real") << "a '..' target resolves from the link's dir";
  EXPECT_EQ(resolve(s + "/abs"), s + "/real");
  EXPECT_EQ(resolve(s + "/chain"), s + "/real/sub") << "a link to a link";
  EXPECT_EQ(resolve(s + "/rel/.."), s + "/real") << "link/.. climbs from the link's target";
  EXPECT_EQ(resolve(s + "/real/./sub/../sub"), s + "/real/sub");
  EXPECT_EQ(resolve(s + "/real/missing/more"), s + "/real/missing/more")
      << "missing components are kept as written";
  EXPECT_EQ(resolve(s + "/rel/missing"), s + "/real/sub/missing");
  EXPECT_EQ(resolve(b->working_dir()), b->working_dir()) << "the working dir maps to itself";
}

void path_realpath_loop(RuleContext& ctx) {
  auto b = ctx.make();
  auto* r = &ctx.rp(*b);
  const std::string s = ctx.scratch(b);
  ctx.sh(b, "cd " + sh_quote(s) + " && ln -s b a && ln -s a b && ln -s self self");
  for (const std::string name : {"a", "self", "a/below"}) {
    const std::string path = s + "/" + name;
    auto outcome = std::make_shared<std::string>();
    const bool finished = run_with_deadline(
        [keep = b, r, path, outcome] {
          try {
            *outcome = "path:" + r->realpath(path);
          } catch (const std::filesystem::filesystem_error&) {
            *outcome = "error";
          } catch (const workspace::WorkspaceError&) {
            *outcome = "error";
          } catch (...) {  // whatever it is: a throw out of this thread would end the runner
            *outcome = "unexpected exception: " + describe_throw([] { throw; });
          }
        },
        Seconds(10));
    if (!finished) ctx.note_abandoned();
    ASSERT_TRUE(finished) << "realpath(" << path << ") of a link loop did not end within 10 s";
    if (outcome->rfind("path:", 0) == 0) {
      const std::string got = outcome->substr(5);
      EXPECT_EQ(got.rfind(s + "/", 0), 0u)
          << "realpath of a loop must fail or give a path inside the loop's directory: " << got;
    } else {
      EXPECT_EQ(*outcome, "error") << path;
    }
  }
}

void path_entries_follow_links(RuleContext& ctx) {
  auto b = ctx.make();
  Files files(ctx, b);
  const std::string s = ctx.scratch(b);
  files.write(s + "/realdir/inner", "12345");
  files.write(s + "/file", "abc");
  ctx.sh(b, "cd " + sh_quote(s) + " && ln -s realdir dlink && ln -s file flink");
  auto d = files.stat(s + "/dlink");
  EXPECT_TRUE(d.is_dir) << "stat of a link to a directory must say directory";
  EXPECT_EQ(d.name, "dlink");
  EXPECT_EQ(d.path, s + "/dlink");
  auto fl = files.stat(s + "/flink");
  EXPECT_FALSE(fl.is_dir);
  EXPECT_EQ(fl.size, std::optional<std::uint64_t>(3)) << "stat follows a link to a file";
  auto list = files.list(s);
  const FileEntry* dl = find_entry(list, "dlink");
  ASSERT_NE(dl, nullptr) << names_of(list);
  EXPECT_TRUE(dl->is_dir) << "list_dir must report a link to a directory as a directory";
  const FileEntry* fle = find_entry(list, "flink");
  ASSERT_NE(fle, nullptr) << names_of(list);
  EXPECT_FALSE(fle->is_dir);
  auto through = files.list(s + "/dlink");
  ASSERT_EQ(through.size(), 1u) << names_of(through);
  EXPECT_EQ(through[0].name, "inner");
}

}  // namespace lizard::conformance::internal
