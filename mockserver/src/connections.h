// What httplib 0.11.4 does not let a server do with its sockets, done by
// finding them in /proc/self/fd: drop one connection without an answer, and
// raise the listen backlog. Thread-safe.
#pragma once

namespace lizard::mock::internal {

// Shuts down the connection whose local and peer ports are these, so that
// the client gets no status line at all.
void drop_connection(int local_port, int remote_port);
// httplib listens with a backlog of 5: a burst of 64 connects overflows the
// accept queue and some clients see resets. listen(2) again on the bound
// socket raises it.
void raise_listen_backlog(int port);

}  // namespace lizard::mock::internal
