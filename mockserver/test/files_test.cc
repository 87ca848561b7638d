// The files API: bytes, errors, links, odd paths.
#include "mock_test_util.h"

namespace lizard::mock::test {
namespace {

std::string base64(const std::string& in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    unsigned v = (static_cast<unsigned char>(in[i]) << 16) |
                 (static_cast<unsigned char>(in[i + 1]) << 8) |
                 static_cast<unsigned char>(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += k[(v >> s) & 63];
  }
  if (i + 1 == in.size()) {
    unsigned v = static_cast<unsigned char>(in[i]) << 16;
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    unsigned v =
        (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8);
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += k[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

// On the firecracker era, which stores base64 uploads exactly; the
// kubernetes era's UTF-8-only uploads are in era_test.cc.
class FilesTest : public MockFixture {
 protected:
  FilesTest() : MockFixture(MockOptions{.era = Era::kFirecracker}) {}
  void SetUp() override { id_ = create(); }
  httplib::Result write(const std::string& path, const std::string& content, bool b64 = false) {
    return post(files_path(id_), "{\"path\":" + quote(path) +
                                     ",\"content\":" + quote(b64 ? base64(content) : content) +
                                     (b64 ? ",\"encoding\":\"base64\"" : "") + "}");
  }
  httplib::Result read(const std::string& path) {
    return get(files_path(id_) + "?path=" + httplib::detail::encode_query_param(path));
  }
  httplib::Result stat(const std::string& path) {
    return get(files_path(id_) + "/stat?path=" + httplib::detail::encode_query_param(path));
  }
  httplib::Result list(const std::string& path) {
    return get(files_path(id_) + "/list?path=" + httplib::detail::encode_query_param(path));
  }
  httplib::Result remove(const std::string& path) {
    return del(files_path(id_), "{\"path\":" + quote(path) + "}");
  }
  static std::string code(const httplib::Result& r) { return str_field(parse(r->body), "code"); }
  std::string id_;
};

TEST_F(FilesTest, AllByteValuesRoundTripThroughNewParents) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  auto w = write("/workspace/new/deep/dir/bytes.bin", bytes, true);
  ASSERT_TRUE(w);
  ASSERT_EQ(w->status, 200) << w->body;
  auto r = read("/workspace/new/deep/dir/bytes.bin");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/octet-stream");
  EXPECT_EQ(r->body, bytes);
  ASSERT_EQ(write("/workspace/new/deep/dir/bytes.bin", "short")->status, 200);
  EXPECT_EQ(read("/workspace/new/deep/dir/bytes.bin")->body, "short");
  EXPECT_EQ(sh(id_, "cat /workspace/new/deep/dir/bytes.bin").out, "short");
}

TEST_F(FilesTest, EmptyFileAndStatFields) {
  ASSERT_EQ(write("/workspace/empty", "")->status, 200);
  auto s = stat("/workspace/empty");
  ASSERT_TRUE(s);
  ASSERT_EQ(s->status, 200);
  auto d = parse(s->body);
  EXPECT_EQ(str_field(d, "name"), "empty");
  EXPECT_EQ(str_field(d, "path"), "/workspace/empty");
  EXPECT_EQ(str_field(d, "type"), "file");
  EXPECT_EQ(int_field(d, "size"), 0);
  EXPECT_EQ(str_field(d, "permissions"), "-rw-r--r--");
  EXPECT_EQ(int_field(d, "mode"), 0644);
  EXPECT_EQ(str_field(d, "owner"), "root");
  EXPECT_GT(int_field(d, "modTime"), 0);
}

TEST_F(FilesTest, ErrorsCarryTheirCodes) {
  ASSERT_EQ(write("/workspace/file", "x")->status, 200);
  ASSERT_EQ(sh(id_, "mkdir -p /workspace/dir && mkfifo /workspace/fifo").exit_code, 0);
  struct Case {
    httplib::Result r;
    int status;
    std::string code;
  };
  Case cases[] = {
      {read("/workspace/missing"), 404, "ENOENT"},
      {stat("/workspace/missing"), 404, "ENOENT"},
      {list("/workspace/missing"), 404, "ENOENT"},
      {remove("/workspace/missing"), 404, "ENOENT"},
      {read("/workspace/dir"), 400, "EISDIR"},
      {write("/workspace/dir", "x"), 400, "EISDIR"},
      {list("/workspace/file"), 400, "ENOTDIR"},
      {write("/workspace/file/child", "x"), 400, "ENOTDIR"},
      {read("/workspace/fifo"), 400, "EINVAL"},
      {read("relative/path"), 400, "EINVAL"},
      {write("relative", "x"), 400, "EINVAL"},
      {write("/usr/bin/evil", "x"), 400, "EACCES"},
      {post(files_path(id_), R"({"path":"/workspace/b","content":"%%%","encoding":"base64"})"), 400,
       "EINVAL"},
      {post(files_path(id_), R"({"path":"/workspace/b"})"), 400, "EINVAL"},
      {post(files_path(id_), R"({"path":"/workspace/a\u0000b","content":"x"})"), 400, "EINVAL"},
      {get(files_path(id_)), 400, "EINVAL"},
  };
  for (auto& c : cases) {
    ASSERT_TRUE(c.r);
    EXPECT_EQ(c.r->status, c.status) << c.r->body;
    EXPECT_EQ(code(c.r), c.code) << c.r->body;
  }
}

// A command can fill a directory with millions of files: the mock listed
// them all (a million took 87 s and 1 GB of its memory). Up to
// kMaxListEntries are listed; one more is refused, saying why.
TEST_F(FilesTest, AListOfMoreThanTheEntryLimitIsRefused) {
  ASSERT_EQ(sh(id_, "mkdir /workspace/many && cd /workspace/many && seq 1 100000 | xargs touch")
                .exit_code,
            0);
  auto r = list("/workspace/many");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(parse(r->body).Size(), 100000u);
  ASSERT_EQ(sh(id_, "touch /workspace/many/one-more").exit_code, 0);
  r = list("/workspace/many");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("more than 100000 entries"), std::string::npos) << r->body;
}

TEST_F(FilesTest, ListIsOneLevelSortedWithLinks) {
  ASSERT_EQ(sh(id_,
               "mkdir -p /workspace/l/sub/deeper && cd /workspace/l && echo b > b && "
               "echo a > a && ln -s a link && ln -s loop loop")
                .exit_code,
            0);
  auto r = list("/workspace/l");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto d = parse(r->body);
  ASSERT_TRUE(d.IsArray());
  ASSERT_EQ(d.Size(), 5u);
  std::vector<std::string> names;
  for (const auto& e : d.GetArray()) names.push_back(str_field(e, "name"));
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "link", "loop", "sub"}));
  EXPECT_EQ(str_field(d[2], "type"), "symlink");
  EXPECT_EQ(str_field(d[2], "symlinkTarget"), "a");
  EXPECT_EQ(str_field(d[2], "path"), "/workspace/l/link");
  EXPECT_EQ(str_field(d[3], "type"), "symlink");
  EXPECT_EQ(str_field(d[4], "type"), "dir");
  auto s = stat("/workspace/l/link");
  EXPECT_EQ(str_field(parse(s->body), "type"), "symlink");
  EXPECT_EQ(code(read("/workspace/l/loop")), "ELOOP");
}

TEST_F(FilesTest, RemoveLinkNotTargetAndTreesWithoutFollowing) {
  ASSERT_EQ(sh(id_,
               "mkdir -p /workspace/keep /workspace/tree/x && echo k > /workspace/keep/f && "
               "ln -s /workspace/keep /workspace/tree/x/l && ln -s /workspace/keep /workspace/link")
                .exit_code,
            0);
  EXPECT_EQ(remove("/workspace/link")->status, 200);
  EXPECT_EQ(remove("/workspace/tree")->status, 200);
  EXPECT_EQ(read("/workspace/keep/f")->body, "k\n");
  EXPECT_EQ(stat("/workspace/tree")->status, 404);
  EXPECT_EQ(remove("/")->status, 400);
}

TEST_F(FilesTest, WriteThroughLinkKeepsModeAndInode) {
  ASSERT_EQ(sh(id_,
               "printf old > /workspace/t && chmod 755 /workspace/t && "
               "ln -s t /workspace/to && stat -c %i /workspace/t > /tmp/inode")
                .exit_code,
            0);
  ASSERT_EQ(write("/workspace/to", "new")->status, 200);
  EXPECT_EQ(sh(id_,
               "cat /workspace/t; stat -c ' %a' /workspace/t; "
               "[ \"$(stat -c %i /workspace/t)\" = \"$(cat /tmp/inode)\" ] && echo same")
                .out,
            "new 755\nsame\n");
  EXPECT_EQ(str_field(parse(stat("/workspace/to")->body), "type"), "symlink");
}

TEST_F(FilesTest, PathsStayInsideTheSandbox) {
  // ".." never climbs above the sandbox's root; absolute links resolve inside it.
  ASSERT_EQ(write("/workspace/../../../workspace/up", "u")->status, 200);
  EXPECT_EQ(read("/workspace/up")->body, "u");
  std::string host_dir = server_->workspace_dir(id_);
  ASSERT_FALSE(host_dir.empty());
  ASSERT_EQ(sh(id_, "ln -s " + host_dir + " /workspace/hostlink").exit_code, 0);
  EXPECT_EQ(read("/workspace/hostlink/up")->status, 404);
  EXPECT_EQ(
      read("/../../etc/hostname")->status == 200 || read("/../../etc/hostname")->status == 404,
      true);
}

TEST_F(FilesTest, OddNamesRoundTrip) {
  for (const std::string& name : std::vector<std::string>{"with space", "quo'te\"s", "$(echo no)",
                                                          "new\nline", "-leading", "ünïcødé"}) {
    std::string path = "/workspace/odd/" + name;
    ASSERT_EQ(write(path, name)->status, 200) << name;
    EXPECT_EQ(read(path)->body, name);
    EXPECT_EQ(str_field(parse(stat(path)->body), "name"), name);
    EXPECT_EQ(remove(path)->status, 200);
  }
  // Bytes that are not UTF-8 in a name: still a JSON answer.
  ASSERT_EQ(sh(id_, "touch \"/workspace/odd/$(printf 'bad\\377name')\"").exit_code, 0);
  auto r = list("/workspace/odd");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(parse(r->body).IsArray());
  auto raw = get(files_path(id_) + "/stat?path=/workspace/odd/bad%FFname");
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->status, 200);
  EXPECT_TRUE(parse(raw->body).IsObject());
}

// Bodies are parsed in place (mockserver/src/json.h): escapes are decoded
// inside the received text, so the journal must have taken its copy first,
// and a NUL, which would end an in-situ parse early, is malformed.
TEST_F(FilesTest, EscapesDecodeInPlaceAndTheJournalKeepsTheBodyAsSent) {
  const std::string sent =
      "{\"path\":\"/workspace/esc\\u0041.txt\",\"content\":"
      "\"a\\nb\\t\\\"q\\\" \\u00e9 \\ud83d\\ude00 \\\\ \\/end\"}";
  auto w = post(files_path(id_), sent);
  ASSERT_TRUE(w);
  ASSERT_EQ(w->status, 200) << w->body;
  const auto written = server_->requests();
  ASSERT_FALSE(written.empty());
  EXPECT_EQ(written.back().body, sent) << "the journal must keep the body as it was sent";
  EXPECT_EQ(read("/workspace/escA.txt")->body, "a\nb\t\"q\" \xC3\xA9 \xF0\x9F\x98\x80 \\ /end");
  // One leading byte order mark is passed over.
  ASSERT_EQ(
      post(files_path(id_), "\xEF\xBB\xBF{\"path\":\"/workspace/bom\",\"content\":\"b\"}")->status,
      200);
  EXPECT_EQ(read("/workspace/bom")->body, "b");

  const std::string nul(1, '\0');
  const std::string cases[][2] = {
      // A NUL after the object: an in-situ parse would stop there and write.
      {"{\"path\":\"/workspace/nul-after\",\"content\":\"x\"}" + nul + "{", "NUL"},
      {"{\"path\":\"/workspace/nul-inside\",\"content\":\"x" + nul + "y\"}", "NUL"},
      {"{\"path\":\"/workspace/bad-utf8\",\"content\":\"x\xFFy\"}", "invalid UTF-8 at offset 42"},
      {"{\"path\":\"/workspace/surrogate\",\"content\":\"\xED\xA0\x80\"}", "invalid UTF-8"},
      {"{\"path\":\"/workspace/unclosed\",\"content\":\"x", "Malformed JSON"},
  };
  for (const auto& [body, why] : cases) {
    auto r = post(files_path(id_), body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    EXPECT_EQ(code(r), "BAD_REQUEST") << r->body;
    EXPECT_NE(r->body.find(why), std::string::npos) << r->body;
    EXPECT_EQ(server_->requests().back().body, body) << "the journal keeps a refused body as sent";
  }
  for (const char* path : {"/workspace/nul-after", "/workspace/nul-inside", "/workspace/bad-utf8",
                           "/workspace/surrogate", "/workspace/unclosed"}) {
    EXPECT_EQ(read(path)->status, 404) << path << " was written from a malformed body";
  }
}

TEST_F(FilesTest, MoveCreatesParentsAndWatchIs501) {
  ASSERT_EQ(write("/workspace/m", "moved")->status, 200);
  auto mv = post(files_path(id_) + "/move", R"({"from":"/workspace/m","to":"/workspace/x/y/m2"})");
  ASSERT_TRUE(mv);
  EXPECT_EQ(mv->status, 200) << mv->body;
  EXPECT_EQ(read("/workspace/x/y/m2")->body, "moved");
  EXPECT_EQ(read("/workspace/m")->status, 404);
  auto w = post(files_path(id_) + "/watch", R"({"path":"/workspace"})");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->status, 501);
  EXPECT_EQ(w->body, R"({"error":"Not implemented"})");
}

}  // namespace
}  // namespace lizard::mock::test
