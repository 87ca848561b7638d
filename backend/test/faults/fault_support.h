// Shared helpers of the fault tests: a hostile raw HTTP server that answers
// with whatever bytes a test scripts (lying Content-Length, endless bodies,
// headers the mock's faults cannot set). Process samples (fds, threads, RSS)
// and Eventually are lizard::testing's, brought into lizard::faults here.
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "lizard/testing/eventually.h"
#include "lizard/testing/process.h"

namespace lizard::faults {

using namespace std::chrono_literals;

// The process samples and Eventually come from lizard::testing.
using lizard::testing::Eventually;
using lizard::testing::open_fds;
using lizard::testing::rss_kib;
using lizard::testing::threads;

// Writes all of `bytes`; false when the peer went away.
inline bool send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// A loopback HTTP/1.1 server that reads one request per connection (headers
// and a Content-Length body) and hands the connection to `answer`, which
// writes raw bytes. Connections are closed after `answer` returns.
class RawServer {
 public:
  using Answer = std::function<void(int fd, const std::string& request)>;

  explicit RawServer(Answer answer) : answer_(std::move(answer)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) throw std::runtime_error("socket");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_fd_, 16) != 0) {
      ::close(listen_fd_);
      throw std::runtime_error("bind/listen");
    }
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { loop(); });
  }
  ~RawServer() {
    stop_ = true;
    thread_.join();
    ::close(listen_fd_);
  }
  RawServer(const RawServer&) = delete;
  RawServer& operator=(const RawServer&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int connections() const { return connections_.load(); }
  std::vector<std::string> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  void loop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      ++connections_;
      const std::string request = read_request(fd);
      {
        std::lock_guard lock(mutex_);
        requests_.push_back(request);
      }
      answer_(fd, request);
      ::shutdown(fd, SHUT_RDWR);
      ::close(fd);
    }
  }

  static std::string read_request(int fd) {
    std::string data;
    char buf[65536];
    std::size_t need = std::string::npos;
    while (true) {
      if (need != std::string::npos && data.size() >= need) break;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 5000) <= 0) break;
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      data.append(buf, static_cast<std::size_t>(n));
      const auto end = data.find("\r\n\r\n");
      if (end != std::string::npos && need == std::string::npos) {
        std::size_t length = 0;
        std::string lower = data.substr(0, end);
        for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        const auto at = lower.find("content-length:");
        if (at != std::string::npos) length = std::stoul(lower.substr(at + 15));
        need = end + 4 + length;
      }
    }
    return data;
  }

  Answer answer_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  mutable std::mutex mutex_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

}  // namespace lizard::faults
