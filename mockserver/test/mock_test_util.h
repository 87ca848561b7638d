// Shared helpers for the mock's tests: a running MockServer, a loopback
// client and JSON access.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lizard/mock/mock_server.h"
#include "lizard/testing/eventually.h"
#include "lizard/testing/process.h"

namespace lizard::mock::test {

inline rapidjson::Document parse(const std::string& text) {
  rapidjson::Document d;
  d.Parse(text.data(), text.size());
  return d;
}

// A JSON string literal for `s` (escaped).
inline std::string quote(const std::string& s) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
  return std::string(buf.GetString(), buf.GetSize());
}

inline std::string str_field(const rapidjson::Value& v, const char* name) {
  if (!v.IsObject()) return "<not an object>";
  auto it = v.FindMember(name);
  if (it == v.MemberEnd() || !it->value.IsString()) return "<missing>";
  return std::string(it->value.GetString(), it->value.GetStringLength());
}

inline std::int64_t int_field(const rapidjson::Value& v, const char* name) {
  if (!v.IsObject()) return -9999;
  auto it = v.FindMember(name);
  if (it == v.MemberEnd() || !it->value.IsInt64()) return -9999;
  return it->value.GetInt64();
}

inline bool bool_field(const rapidjson::Value& v, const char* name) {
  if (!v.IsObject()) return false;
  auto it = v.FindMember(name);
  return it != v.MemberEnd() && it->value.IsBool() && it->value.GetBool();
}

// The standalone lizard-mock: $LIZARD_MOCK_BINARY when set (a copy, for a
// run as another user), else the one this build made.
inline std::string mock_binary() {
  if (const char* p = std::getenv("LIZARD_MOCK_BINARY"); p != nullptr && *p != '\0') return p;
#ifdef LIZARD_MOCK_BINARY
  return LIZARD_MOCK_BINARY;
#else
  return {};
#endif
}

// Waiting and process counting come from lizard::testing, as in every other
// test (Eventually's default wait, 60 s, included).
using lizard::testing::host_processes_with;
inline ::testing::AssertionResult eventually(const std::function<bool()>& cond) {
  return lizard::testing::Eventually(cond);
}
inline ::testing::AssertionResult eventually(const std::function<bool()>& cond,
                                             std::chrono::milliseconds limit) {
  return lizard::testing::Eventually(cond, limit);
}

using lizard::testing::rss_kib;  // this process's resident memory, in KiB (the mock included)

// A raw TCP connection to the mock, for what an HTTP client would not send.
class RawConnection {
 public:
  explicit RawConnection(int port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) close();
  }
  ~RawConnection() { close(); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool ok() const { return fd_ >= 0; }
  // False once the peer no longer takes bytes.
  bool send(const std::string& bytes) {
    std::size_t done = 0;
    while (fd_ >= 0 && done < bytes.size()) {
      pollfd p{fd_, POLLOUT, 0};
      if (::poll(&p, 1, 10000) <= 0) return false;
      const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<std::size_t>(n);
    }
    return fd_ >= 0;
  }
  // Everything the peer sends until it closes, or `limit` passes quietly.
  std::string receive(std::chrono::milliseconds limit = std::chrono::seconds(15)) {
    std::string got;
    char buf[65536];
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (fd_ >= 0) {
      if (!readable_before(deadline)) break;
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      got.append(buf, static_cast<std::size_t>(n));
    }
    return got;
  }
  // The status line the peer sends first ("" when none comes in `limit`).
  std::string status_line(std::chrono::milliseconds limit = std::chrono::seconds(15)) {
    std::string got;
    char c;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (fd_ >= 0 && got.find("\r\n") == std::string::npos) {
      if (!readable_before(deadline)) break;
      if (::recv(fd_, &c, 1, 0) != 1) break;
      got += c;
    }
    return got.substr(0, got.find("\r\n"));
  }
  // True once the peer has closed the connection (end of stream or reset),
  // reading and dropping what it sent before; false if it is still open
  // after `limit`.
  bool closed_by_peer(std::chrono::milliseconds limit = std::chrono::seconds(15)) {
    char buf[4096];
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (fd_ >= 0) {
      if (!readable_before(deadline)) return false;
      if (::recv(fd_, buf, sizeof buf, 0) <= 0) return true;
    }
    return true;
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  // True when the peer sent something (or closed) before `deadline`.
  bool readable_before(std::chrono::steady_clock::time_point deadline) const {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    pollfd p{fd_, POLLIN, 0};
    return left > 0 && ::poll(&p, 1, static_cast<int>(left)) > 0;
  }
  int fd_;
};

struct ExecResult {
  int status = 0;
  std::string out, err;
  int exit_code = -1;
  bool truncated = false, timed_out = false;
  std::string body;
};

class MockFixture : public ::testing::Test {
 protected:
  explicit MockFixture(MockOptions options = {}) : server_(std::make_unique<MockServer>(options)) {}

  httplib::Client client(const std::string& key = "") const {
    httplib::Client c(server_->url());
    c.set_read_timeout(120, 0);
    c.set_write_timeout(60, 0);
    c.set_default_headers({{"X-API-Key", key.empty() ? server_->api_key() : key},
                           {"X-Mock-Control-Key", server_->control_key()}});
    return c;
  }

  httplib::Result post(const std::string& path, const std::string& body,
                       const std::string& key = "") const {
    return client(key).Post(path, body, "application/json");
  }
  httplib::Result get(const std::string& path, const std::string& key = "") const {
    return client(key).Get(path);
  }
  httplib::Result del(const std::string& path, const std::string& body = "") const {
    return client().Delete(path, body, "application/json");
  }

  std::string create(const std::string& extra = "") {
    std::string body = R"({"template":"base","projectId":")" + server_->project_id() + "\"" +
                       (extra.empty() ? "" : "," + extra) + "}";
    auto r = post("/api/sandboxes", body);
    EXPECT_TRUE(r);
    if (!r) return {};
    EXPECT_EQ(r->status, 201) << r->body;
    return str_field(parse(r->body), "sandboxId");
  }

  // The status of a create with `extra` fields (no sandbox expected).
  int create_status(const std::string& extra) {
    auto r =
        post("/api/sandboxes", R"({"projectId":")" + server_->project_id() + "\"," + extra + "}");
    return r ? r->status : -1;
  }

  // A sandbox in another project.
  std::string create_in(const std::string& project) {
    auto r = post("/api/sandboxes", R"({"projectId":")" + project + "\"}");
    EXPECT_TRUE(r && r->status == 201) << (r ? r->body : "no answer");
    return r ? str_field(parse(r->body), "sandboxId") : std::string();
  }

  ExecResult exec(const std::string& id, const std::string& cmd_json,
                  const std::string& extra = "") {
    ExecResult out;
    auto r = post("/api/sandboxes/" + id + "/exec",
                  "{\"cmd\":" + cmd_json + (extra.empty() ? "" : "," + extra) + "}");
    if (!r) {
      out.body = "transport error: " + httplib::to_string(r.error());
      return out;
    }
    out.status = r->status;
    out.body = r->body;
    auto d = parse(r->body);
    out.out = str_field(d, "stdout");
    out.err = str_field(d, "stderr");
    out.exit_code = static_cast<int>(int_field(d, "exitCode"));
    out.truncated = bool_field(d, "truncated");
    out.timed_out = bool_field(d, "timedOut");
    return out;
  }

  ExecResult sh(const std::string& id, const std::string& script, const std::string& extra = "") {
    return exec(id, quote(script), extra);
  }

  std::string files_path(const std::string& id) const { return "/api/sandboxes/" + id + "/files"; }

  std::unique_ptr<MockServer> server_;
};

}  // namespace lizard::mock::test
