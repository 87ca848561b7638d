// Decoding of every Lizard API response type, end to end through the
// client: a loopback server in this process answers each request with the
// fuzzer's status and body, and one client method per input decodes it.
// Input: byte 0 picks the method, byte 1 the status, the rest is the body.
// Properties: nothing crashes (ASan/UBSan), and every failure is a
// lizard::workspace::WorkspaceError (ApiError and the transient, auth,
// not-supported kinds included) — never another exception type.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "lizard/api/client.h"
#include "lizard/workspace/errors.h"

namespace {

std::mutex g_mutex;
int g_status = 200;
std::string g_body;
std::string g_type = "application/json";

bool send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// One keep-alive connection: read a request, answer with the current reply.
void serve(int fd) {
  std::string buffer;
  char chunk[65536];
  while (true) {
    std::size_t end;
    while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
      const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) {
        ::close(fd);
        return;
      }
      buffer.append(chunk, static_cast<std::size_t>(n));
    }
    std::size_t length = 0;
    std::string head = buffer.substr(0, end);
    for (auto& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const auto at = head.find("content-length:");
    if (at != std::string::npos) length = std::strtoul(head.c_str() + at + 15, nullptr, 10);
    while (buffer.size() < end + 4 + length) {
      const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) {
        ::close(fd);
        return;
      }
      buffer.append(chunk, static_cast<std::size_t>(n));
    }
    buffer.erase(0, end + 4 + length);
    std::string reply;
    {
      std::lock_guard lock(g_mutex);
      reply = "HTTP/1.1 " + std::to_string(g_status) + " X\r\nContent-Type: " + g_type +
              "\r\nContent-Length: " + std::to_string(g_body.size()) + "\r\n\r\n" + g_body;
    }
    if (!send_all(fd, reply)) {
      ::close(fd);
      return;
    }
  }
}

int start_server() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 64) != 0) {
    std::abort();
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::thread([fd] {
    while (true) {
      const int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c >= 0) std::thread(serve, c).detach();
    }
  }).detach();
  return ntohs(addr.sin_port);
}

lizard::api::ClientOptions options(int port) {
  lizard::api::ClientOptions o;
  o.api_key = "liz_fuzz_key";
  o.api_url = "http://127.0.0.1:" + std::to_string(port);
  o.request_timeout = std::chrono::seconds(10);
  return o;
}

constexpr int kStatuses[] = {200, 201, 204, 400, 401, 402, 403, 404,
                             408, 409, 429, 500, 501, 502, 503, 302};

using lizard::api::Client;

lizard::api::ExecRequest exec_true() {
  lizard::api::ExecRequest exec;
  exec.cmd = std::vector<std::string>{"true"};
  return exec;
}

// One client method per row; byte 0 of the input picks the row. The port is
// the loopback server's, for a method that needs a client of its own.
using Call = void (*)(Client& client, int port);
constexpr Call kCalls[] = {
    [](Client& c, int) { (void)c.list_projects(); },
    [](Client&, int port) {
      Client fresh(options(port));  // resolve_project caches
      (void)fresh.resolve_project("mock-project");
    },
    [](Client& c, int) {
      lizard::api::CreateSandboxRequest request;
      request.project_id = "prj_1";
      (void)c.create_sandbox(request);
    },
    [](Client& c, int) { (void)c.get_sandbox("sbx_1"); },
    [](Client& c, int) { (void)c.list_sandboxes(); },
    [](Client& c, int) { (void)c.kill_sandbox("sbx_1"); },
    [](Client& c, int) { (void)c.exec("sbx_1", exec_true()); },
    [](Client& c, int) {
      (void)c.exec_stream("sbx_1", exec_true(), [](const lizard::api::ExecEvent&) {});
    },
    [](Client& c, int) { (void)c.list_processes("sbx_1"); },
    [](Client& c, int) { (void)c.list_files("sbx_1", "/workspace"); },
    [](Client& c, int) { (void)c.stat_file("sbx_1", "/workspace/f"); },
    [](Client& c, int) { (void)c.read_file("sbx_1", "/workspace/f"); },
    [](Client& c, int) { (void)c.create_volume("prj_1", {.name = "v"}); },
    [](Client& c, int) { (void)c.list_volumes("prj_1"); },
    [](Client& c, int) { (void)c.get_volume("prj_1", "v"); },
    [](Client& c, int) { c.write_file("sbx_1", "/workspace/f", "x"); },
    [](Client& c, int) { c.signal_process("sbx_1", 7, "SIGTERM"); },
    [](Client& c, int) { c.set_sandbox_timeout("sbx_1", 5000); },
};
// The row of exec_stream, answered as Server-Sent Events.
constexpr std::size_t kExecStream = 7;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const int port = start_server();
  static Client client(options(port));
  if (size < 2) return 0;
  const std::size_t method = data[0] % std::size(kCalls);
  {
    std::lock_guard lock(g_mutex);
    g_status = kStatuses[data[1] % std::size(kStatuses)];
    g_body.assign(reinterpret_cast<const char*>(data) + 2, size - 2);
    g_type = method == kExecStream ? "text/event-stream" : "application/json";
  }
  try {
    kCalls[method](client, port);
  } catch (const lizard::workspace::WorkspaceError&) {
    // A typed refusal: fine.
  }
  (void)lizard::api::parse_error_body(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
