#include "connections.h"

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>

#include "sandbox_files.h"

namespace lizard::mock::internal {
namespace {

int port_of(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
  return -1;
}

// Calls fn(fd) for every socket descriptor of this process.
template <class F>
void for_each_fd(F&& fn) {
  DirPtr d(::opendir("/proc/self/fd"));
  if (!d) return;
  while (dirent* e = ::readdir(d.get())) {
    const int fd = std::atoi(e->d_name);
    if (fd > 2) fn(fd);
  }
}

}  // namespace

void drop_connection(int local_port, int remote_port) {
  for_each_fd([&](int fd) {
    sockaddr_storage local{}, peer{};
    socklen_t ll = sizeof local, pl = sizeof peer;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll) != 0) return;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) != 0) return;
    if (port_of(peer) == remote_port && port_of(local) == local_port) ::shutdown(fd, SHUT_RDWR);
  });
}

void raise_listen_backlog(int port) {
  for_each_fd([&](int fd) {
    int listening = 0;
    socklen_t len = sizeof listening;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening) return;
    sockaddr_storage local{};
    socklen_t ll = sizeof local;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll) != 0) return;
    if (port_of(local) == port) ::listen(fd, 1024);
  });
}

}  // namespace lizard::mock::internal
