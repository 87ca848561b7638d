// /api/sandboxes/{id}/files: write, read, list, stat, remove, move, watch.
// Every path resolves as the sandbox sees it (sandbox_files.h).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <optional>

#include <httplib.h>

#include "api_error.h"
#include "era.h"
#include "json.h"
#include "lizard/workspace/utf8.h"
#include "representations.h"
#include "request_body.h"
#include "routes.h"
#include "sandbox_files.h"
#include "sandbox_runtime.h"
#include "state.h"
#include "wire_values.h"

namespace lizard::mock::internal {
namespace {

// The sandbox's root (as its processes see it), opened before anything
// else so that an unknown or paused sandbox is answered first. run()
// turns a file error into the API's path error (or 404 when the sandbox went
// away meanwhile).
class SandboxRoot {
 public:
  SandboxRoot(MockState& state, const Call& c) : state_(state), id_(c.param(0)) {
    auto sb = state.find_sandbox(c.key, id_);
    auto rt = state.running_runtime(*sb);
    ids_ = rt->ids();
    fd_ = rt->dup_root_fd();
    if (fd_ < 0) not_found_sandbox();
  }
  ~SandboxRoot() { ::close(fd_); }
  SandboxRoot(const SandboxRoot&) = delete;
  SandboxRoot& operator=(const SandboxRoot&) = delete;

  const IdMap& ids() const { return ids_; }

  // The file operations act as sandbox user `name` (root or "user"): what
  // they create is that user's, and its permissions are checked (see run()).
  void as_user(const std::string& name) {
    if (name == "root") return;
    if (name != "user") api_error(400, "Unknown user: " + name + " (root or user)", "EINVAL");
    if (!ids_.chown || ids_.count <= 1000) {
      api_error(400,
                "This mock runs as a normal user, so its sandboxes have no user but root (run it "
                "as root for the account \"user\")",
                "USER_UNAVAILABLE");
    }
    ids_.owner = 1000;
  }

  template <class F>
  void run(F&& fn) {
    try {
      // The kernel checks each access as it would for this sandbox user
      // (host root would read the host's /etc/shadow through a link).
      ScopedFsIdentity identity(ids_);
      fn(fd_);
    } catch (const std::system_error& e) {
      if (!state_.alive(id_)) not_found_sandbox();
      path_error(e);
    }
  }

 private:
  MockState& state_;
  std::string id_;
  IdMap ids_;
  int fd_ = -1;
};

struct FileCloser {
  explicit FileCloser(int f) : fd(f) {}
  ~FileCloser() {
    if (fd >= 0) ::close(fd);
  }
  FileCloser(const FileCloser&) = delete;
  FileCloser& operator=(const FileCloser&) = delete;
  int fd;
};

const std::string& query_path(const Call& c) {
  const std::string* p = c.query("path");
  if (!p) api_error(400, "The 'path' parameter is required", "EINVAL");
  return *p;
}

// `user` of a query (reads) or a body, applied where the era applies it.
void apply_user(const MockState& state, SandboxRoot& root, const std::string* user) {
  if (user && era_rules(state.options().era).file_user) root.as_user(*user);
}

void write(MockState& state, Call& c) {
  SandboxRoot root(state, c);
  const EraRules& era = era_rules(state.options().era);
  RequestBody b(c.body);
  auto path = b.str("path");
  if (!path) api_error(400, "'path' is required", "EINVAL");
  // A view into the parsed body: the content is not copied again.
  const auto content = b.view("content");
  if (!content) api_error(400, "'content' is required", "EINVAL");
  const std::string user = b.str("user").value_or("root");
  const std::string enc = b.str("encoding").value_or("utf8");
  std::string decoded;
  std::string_view bytes;
  if (enc == "base64") {
    if (!decode_base64(*content, decoded))
      api_error(400, "'content' is not valid base64", "EINVAL");
    bytes = decoded;
    if (!era.binary_uploads && !lizard::workspace::is_valid_utf8(bytes)) {
      api_error(400,
                "The decoded content is not UTF-8: this runtime takes UTF-8 file content only "
                "(write text, e.g. base64, and decode it in the sandbox)",
                "INVALID_UTF8");
    }
  } else if (enc == "utf8" || enc == "utf-8" || enc == "text") {
    bytes = *content;
    // The body is UTF-8, but an escaped lone low surrogate ("\udc00")
    // decodes to bytes that are not: this era still takes UTF-8 only.
    if (!era.binary_uploads && !lizard::workspace::is_valid_utf8(bytes)) {
      api_error(400,
                "The content is not UTF-8 (an escaped lone surrogate): this runtime takes "
                "UTF-8 file content only",
                "INVALID_UTF8");
    }
  } else {
    api_error(400, "Unknown encoding: " + enc, "EINVAL");
  }
  root.as_user(era.file_user ? user : "root");
  root.run([&](int fd) { write_file(fd, *path, bytes, root.ids()); });
  c.reply(200, "{}");
}

// Streamed from the open file: memory stays bounded whatever the size (a
// sparse file of gigabytes, say). The answer's length is the size at open.
void read(MockState& state, Call& c) {
  SandboxRoot root(state, c);
  apply_user(state, root, c.query("user"));
  OpenedFile file;
  root.run([&](int fd) { file = open_for_read(fd, query_path(c)); });
  auto fd = std::make_shared<FileCloser>(file.fd);
  c.res.status = 200;
  c.res.set_content_provider(file.size, "application/octet-stream",
                             [fd](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
                               char buf[1 << 16];
                               const std::size_t want = std::min(length, sizeof buf);
                               ssize_t n;
                               do {
                                 n = ::pread(fd->fd, buf, want, static_cast<off_t>(offset));
                               } while (n < 0 && errno == EINTR);
                               if (n <= 0) return false;  // shrank meanwhile: the answer ends short
                               return sink.write(buf, static_cast<std::size_t>(n));
                             });
}

void remove(MockState& state, Call& c) {
  SandboxRoot root(state, c);
  std::string path;
  const std::string* user = c.query("user");
  std::optional<std::string> body_user;
  if (const std::string* p = c.query("path")) {
    path = *p;
  } else {
    RequestBody b(c.body);
    auto p2 = b.str("path");
    if (!p2) api_error(400, "'path' is required", "EINVAL");
    path = *p2;
    body_user = b.str("user");
    if (body_user) user = &*body_user;
  }
  apply_user(state, root, user);
  root.run([&](int fd) { remove_path(fd, path); });
  c.reply(200, "{}");
}

void list(MockState& state, Call& c) {
  SandboxRoot root(state, c);
  apply_user(state, root, c.query("user"));
  root.run([&](int fd) {
    auto entries = list_dir(fd, query_path(c), root.ids());
    JsonOut j;
    j.begin_array();
    for (const auto& e : entries) write_file_info(j, e);
    j.end_array();
    c.reply(200, j.text());
  });
}

void stat(MockState& state, Call& c) {
  SandboxRoot root(state, c);
  apply_user(state, root, c.query("user"));
  root.run([&](int fd) {
    JsonOut j;
    write_file_info(j, stat_path(fd, query_path(c), root.ids()));
    c.reply(200, j.text());
  });
}

void move(MockState& state, Call& c) {
  SandboxRoot root(state, c);
  RequestBody b(c.body);
  auto from = b.str("from");
  auto to = b.str("to");
  if (!from || !to) api_error(400, "'from' and 'to' are required", "EINVAL");
  root.run([&](int fd) { move_path(fd, *from, *to, root.ids()); });
  c.reply(200, "{}");
}

void watch(MockState& state, Call& c) {
  state.find_sandbox(c.key, c.param(0));
  c.reply(501, R"({"error":"Not implemented"})");
}

}  // namespace

void add_file_routes(Router& router, MockState& state) {
  const auto bind = [&state](void (*fn)(MockState&, Call&)) { return with_state(state, fn); };
  router.add("*", "/api/sandboxes/{id}/files/watch/**", bind(watch));
  router.add("POST", "/api/sandboxes/{id}/files", bind(write));
  router.add("GET", "/api/sandboxes/{id}/files", bind(read));
  router.add("DELETE", "/api/sandboxes/{id}/files", bind(remove));
  router.add("GET", "/api/sandboxes/{id}/files/list", bind(list));
  router.add("GET", "/api/sandboxes/{id}/files/stat", bind(stat));
  router.add("POST", "/api/sandboxes/{id}/files/move", bind(move));
}

}  // namespace lizard::mock::internal
