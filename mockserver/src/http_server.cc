#include "http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "api_error.h"

namespace lizard::mock::internal {
namespace {

using Clock = std::chrono::steady_clock;

thread_local ConnectionInfo* tl_connection = nullptr;

// Chunk sizes and trailers on top of the body limit.
constexpr std::size_t kFramingSlack = 1 << 20;
// A refused body is read and dropped for at most this long and this much,
// so that the client reads the answer instead of a reset.
constexpr auto kLingerTime = std::chrono::seconds(2);
constexpr std::size_t kLingerBytes = 16u << 20;

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return std::string(s);
}

void address_of(int sock, bool peer, std::string& ip, int& port) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  const int rc = peer ? ::getpeername(sock, reinterpret_cast<sockaddr*>(&a), &len)
                      : ::getsockname(sock, reinterpret_cast<sockaddr*>(&a), &len);
  if (rc != 0) return;
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(a);
    ::inet_ntop(AF_INET, &in.sin_addr, text, sizeof text);
    port = ntohs(in.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(a);
    ::inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof text);
    port = ntohs(in6.sin6_port);
  }
  ip = text;
}

// A socket stream with the limits of HttpLimits (see http_server.h).
class LimitedStream : public httplib::Stream {
 public:
  LimitedStream(int sock, const HttpLimits& limits, int stop_fd)
      : sock_(sock), limits_(limits), stop_fd_(stop_fd) {
    info_.socket = sock;
  }

  bool is_readable() const override {
    return pos_ < buf_.size() || wait(POLLIN, Clock::now() + limits_.io_timeout) > 0;
  }
  bool is_writable() const override { return wait(POLLOUT, Clock::now() + limits_.io_timeout) > 0; }

  ssize_t read(char* ptr, size_t size) override {
    if (failed_ || size == 0) return failed_ ? -1 : 0;
    if (phase_ == Phase::kHead) return read_head(ptr, size);
    if (phase_ == Phase::kNoBody) return 0;
    if (body_read_ >= limits_.max_body_bytes + kFramingSlack) return fail();
    if (pos_ == buf_.size()) {
      const int got = fill(std::min(Clock::now() + limits_.io_timeout, body_deadline_));
      if (got <= 0) return got == 0 ? 0 : fail();
    }
    const std::size_t n =
        std::min({size, buf_.size() - pos_, limits_.max_body_bytes + kFramingSlack - body_read_});
    std::memcpy(ptr, buf_.data() + pos_, n);
    pos_ += n;
    body_read_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (wait(POLLOUT, Clock::now() + limits_.io_timeout) <= 0) return -1;
    ssize_t n;
    do {
      n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    address_of(sock_, true, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    address_of(sock_, false, ip, port);
  }
  socket_t socket() const override { return sock_; }

  // Waits for the first byte of the next request, at most the idle timeout.
  bool wait_for_request() {
    if (pos_ < buf_.size()) return true;
    return wait(POLLIN, Clock::now() + limits_.idle_timeout) > 0;
  }

  void begin_request() {
    phase_ = Phase::kHead;
    head_.clear();
    lines_ = 0;
    body_read_ = 0;
    head_deadline_ = Clock::now() + limits_.head_timeout;
    info_ = ConnectionInfo{};
    info_.socket = sock_;
  }

  bool failed() const { return failed_; }
  ConnectionInfo& info() { return info_; }

 private:
  enum class Phase { kHead, kBody, kNoBody };

  // > 0 ready, 0 timed out, < 0 stopping or an error.
  int wait(short events, Clock::time_point deadline) const {
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return 0;
      pollfd p[2] = {{sock_, events, 0}, {stop_fd_, POLLIN, 0}};
      const int rc = ::poll(p, 2, static_cast<int>(std::min<long long>(left, 60000)));
      if (rc < 0 && errno == EINTR) continue;
      if (rc < 0 || p[1].revents) return -1;
      if (rc > 0) return 1;
    }
  }

  // Reads more into the buffer: 1 data, 0 end of stream, -1 timeout or error.
  int fill(Clock::time_point deadline) {
    if (wait(POLLIN, deadline) <= 0) return -1;
    if (pos_ == buf_.size()) {
      buf_.clear();
      pos_ = 0;
    }
    char tmp[16384];
    ssize_t n;
    do {
      n = ::recv(sock_, tmp, sizeof tmp, 0);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return -1;
    if (n == 0) return 0;
    buf_.append(tmp, static_cast<std::size_t>(n));
    return 1;
  }

  ssize_t fail() {
    failed_ = true;
    return -1;
  }

  // Answers a refused head itself (httplib would just close) and fails.
  ssize_t refuse_head(int status, const char* reason, const char* message) {
    const char* code = status == 431   ? "HEADERS_TOO_LARGE"
                       : status == 408 ? "REQUEST_TIMEOUT"
                                       : "BAD_REQUEST";
    const std::string body = error_body({status, message, code, ""});
    const std::string answer =
        "HTTP/1.1 " + std::to_string(status) + " " + reason +
        "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
        "\r\nConnection: close\r\n\r\n" + body;
    (void)::send(sock_, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    info_.refuse_rest = true;
    return fail();
  }

  ssize_t read_head(char* ptr, size_t size) {
    if (pos_ == buf_.size()) {
      const int got = fill(head_deadline_);
      if (got == 0) return 0;
      if (got < 0) {
        if (Clock::now() >= head_deadline_ && !head_.empty())
          return refuse_head(408, "Request Timeout", "The request head did not arrive in time");
        return fail();
      }
    }
    std::size_t n = 0;
    while (n < size && pos_ < buf_.size()) {
      const char c = buf_[pos_++];
      ptr[n++] = c;
      head_.push_back(c);
      if (head_.size() > limits_.max_head_bytes)
        return refuse_head(431, "Request Header Fields Too Large", "The request head is too large");
      if (c != '\n') continue;
      // httplib 0.11.4 skips a header line that does not end in CRLF and
      // reads on, without a limit, from what this reader would count as
      // the body: the head is CRLF lines only, or this reader and httplib
      // would disagree on where it ends.
      if (head_.size() < 2 || head_[head_.size() - 2] != '\r')
        return refuse_head(400, "Bad Request", "A line of the request head does not end in CRLF");
      // Blank lines before the request line are skipped (RFC 9112 2.2).
      if (head_ == "\r\n") {
        head_.clear();
        continue;
      }
      if (++lines_ > limits_.max_header_lines + 1)
        return refuse_head(431, "Request Header Fields Too Large", "Too many header lines");
      if (head_.ends_with("\r\n\r\n")) {
        head_complete();
        break;
      }
    }
    return static_cast<ssize_t>(n);
  }

  void head_complete() {
    bool framed = false;
    std::size_t at = head_.find('\n');  // after the request line
    while (at != std::string::npos && at + 1 < head_.size()) {
      const std::size_t end = head_.find('\n', at + 1);
      const std::string_view line(head_.data() + at + 1,
                                  (end == std::string::npos ? head_.size() : end) - at - 1);
      at = end;
      const auto colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      const std::string_view name = line.substr(0, colon);
      const std::string value = trim(line.substr(colon + 1));
      if (iequals(name, "Content-Length") || iequals(name, "Transfer-Encoding")) framed = true;
      if (iequals(name, "X-API-Key") && info_.api_key.empty()) info_.api_key = value;
      if (iequals(name, "Authorization") && info_.authorization.empty())
        info_.authorization = value;
      if (iequals(name, "X-Mock-Control-Key") && info_.control_key.empty())
        info_.control_key = value;
    }
    phase_ = framed ? Phase::kBody : Phase::kNoBody;
    body_deadline_ = Clock::now() + limits_.body_timeout;
    head_.clear();
    head_.shrink_to_fit();
  }

  int sock_;
  const HttpLimits& limits_;
  int stop_fd_;
  std::string buf_;
  std::size_t pos_ = 0;
  Phase phase_ = Phase::kHead;
  std::string head_;
  std::size_t lines_ = 0;
  std::size_t body_read_ = 0;
  Clock::time_point head_deadline_{};
  Clock::time_point body_deadline_{};
  bool failed_ = false;
  ConnectionInfo info_;
};

// Threads made as connections need them (up to `max`): a connection that
// waits never delays the next one while threads remain. `min` threads are
// made at once and kept; the others end after two idle seconds.
class ElasticPool : public httplib::TaskQueue {
 public:
  ElasticPool(std::size_t min, std::size_t max) : min_(min), max_(std::max(min, max)) {
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < min_; ++i) spawn();
  }
  ~ElasticPool() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    std::lock_guard lock(mu_);
    jobs_.push_back(std::move(fn));
    if (idle_ < jobs_.size() && live_ < max_) spawn();
    work_cv_.notify_one();
  }

  void shutdown() override {
    std::unique_lock lock(mu_);
    stopping_ = true;
    work_cv_.notify_all();
    done_cv_.wait(lock, [this] { return live_ == 0; });
  }

 private:
  static constexpr auto kIdleEnd = std::chrono::seconds(2);

  // Caller holds mu_.
  void spawn() {
    ++live_;
    std::thread([this] { work(); }).detach();
  }

  void work() {
    std::unique_lock lock(mu_);
    for (;;) {
      ++idle_;
      const bool woke =
          work_cv_.wait_for(lock, kIdleEnd, [this] { return stopping_ || !jobs_.empty(); });
      --idle_;
      if (jobs_.empty() && (stopping_ || (!woke && live_ > min_))) break;
      if (jobs_.empty()) continue;
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      lock.lock();
    }
    // The last touch of the pool: shutdown() may destroy it right after.
    --live_;
    done_cv_.notify_all();
  }

  std::size_t min_;
  std::size_t max_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::deque<std::function<void()>> jobs_;
  std::size_t live_ = 0;
  std::size_t idle_ = 0;
  bool stopping_ = false;
};

void linger_and_drain(int sock, int stop_fd) {
  ::shutdown(sock, SHUT_WR);
  const auto deadline = Clock::now() + kLingerTime;
  std::size_t drained = 0;
  char buf[65536];
  while (drained < kLingerBytes) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    pollfd p[2] = {{sock, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    if (::poll(p, 2, static_cast<int>(left)) <= 0 || p[1].revents) break;
    const ssize_t n = ::recv(sock, buf, sizeof buf, MSG_DONTWAIT);
    if (n <= 0) break;
    drained += static_cast<std::size_t>(n);
  }
}

}  // namespace

ConnectionInfo& current_connection() {
  thread_local ConnectionInfo none;
  return tl_connection ? *tl_connection : none;
}

bool peer_closed(int socket) {
  if (socket < 0) return false;
  pollfd p{socket, POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

HttpServer::HttpServer(const HttpLimits& limits)
    : limits_(limits), stop_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  const std::size_t min_threads = limits_.min_threads;
  const std::size_t max_threads = limits_.max_threads;
  new_task_queue = [min_threads, max_threads] { return new ElasticPool(min_threads, max_threads); };
  set_payload_max_length(limits_.max_body_bytes);
  // Never share a port with another server (httplib's default adds SO_REUSEPORT).
  set_socket_options([](socket_t sock) {
    const int yes = 1;
    (void)::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
}

HttpServer::~HttpServer() {
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

void HttpServer::request_stop() {
  const std::uint64_t one = 1;
  (void)::write(stop_fd_, &one, sizeof one);
}

bool HttpServer::process_and_close_socket(socket_t sock) {
  // httplib writes head and body apart; without TCP_NODELAY, Nagle's
  // algorithm holds the body until the client's delayed ACK (~40 ms).
  const int yes = 1;
  (void)::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  LimitedStream strm(sock, limits_, stop_fd_);
  tl_connection = &strm.info();
  bool ok = false;
  for (std::size_t left = keep_alive_max_count_; left > 0; --left) {
    if (!strm.wait_for_request()) break;
    strm.begin_request();
    bool closed = false;
    ok = process_request(strm, left == 1, closed, [](httplib::Request&) {});
    if (!ok || closed || strm.failed()) break;
  }
  if (strm.info().refuse_rest) linger_and_drain(sock, stop_fd_);
  tl_connection = nullptr;
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ok;
}

}  // namespace lizard::mock::internal
