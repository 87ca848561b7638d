// The adapter's side of the backend protocol (docs/protocol.md) for backends
// written in C++: serves the backends of a BackendFactory over a pair of file
// descriptors (stdin and stdout). lizard-workspace-serve is a thin main
// around it; a C++ backend living in another process can use it the same way.
//
//   auto factory = lizard::conformance::make_local_factory();
//   return lizard::conformance::serve_protocol(*factory);   // until stdin ends
//
// At initialize it opens one session of the factory (for the rule the runner
// names) and answers with the session's capabilities, deviations and attach
// support and the factory's profile; backend/new is the session's make() (or
// its platform's make_with() when overrides are given), backend/attach its
// attach(), environment/destroy its destroy_environment(). Requests run
// concurrently, each on a worker thread of its own (a worker waits up to 10 s
// for the next request when its own is answered; past max_in_flight + 16
// workers, as when the caller reads no answers, requests wait for one);
// $/cancelRequest stops a run.
//
// Thread safety: call once per pair of descriptors; the factory must be
// thread-safe (as every BackendFactory is).
#pragma once

#include <string>

#include "lizard/conformance/backend_factory.h"

namespace lizard::conformance {

struct ServeOptions {
  int in_fd = 0;
  int out_fd = 1;
  // The name initialize answers; empty: the factory's name().
  std::string name;
  // Refuse lines longer than this (the runner's own limit is 96 MiB).
  std::size_t max_line_bytes = 128u << 20;
  // Requests in flight at once (each runs on a worker of its own); one more
  // is refused with an error at once (the runner's rules start at most 16).
  int max_in_flight = 256;
  // The bytes of the lines of the requests in flight together (each keeps
  // its line until answered); one more is refused with an error at once.
  // Four 64 MiB writes of the largest rule fit.
  std::size_t max_bytes_in_flight = 512u << 20;
};

// Serves until `in_fd` reaches end of file, then stops runs still in flight,
// waits (at most 10 s) for the requests to end, and closes the session.
// Returns 0, or 1 when requests were still running (the caller should then
// exit without destroying the factory).
int serve_protocol(BackendFactory& factory, const ServeOptions& options = {});

}  // namespace lizard::conformance
