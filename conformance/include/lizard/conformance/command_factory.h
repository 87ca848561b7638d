// The conformance factory for a backend in any language: each rule session
// starts the adapter program (one process per session, so a crash is
// contained to its rule) and speaks the backend protocol with it
// (docs/protocol.md). `lizard-conformance --backend command -- PROGRAM
// [ARGS...]` runs the suite through it.
//
//   lizard::conformance::CommandFactoryOptions options;
//   options.adapter.argv = {"python3", "adapter.py"};
//   options.platforms["lizard"] = lizard::conformance::make_mock_platform_provider();
//   auto factory = lizard::conformance::make_command_factory(std::move(options));
//   lizard::conformance::run_conformance(*factory, runner_options);
//
// The adapter's answer to initialize decides the profile, capabilities,
// deviations and attach support; the factory learns them once, from a first
// adapter started without a platform (preflight), so an adapter must answer
// initialize without contacting its platform. For a profile with a platform
// provider, every session starts that platform and passes its variables in
// the adapter's environment; the rules get the platform's view, with
// make_with() going to the adapter (backend/new with overrides) and
// log_lines() being the adapter's stderr.
//
// An adapter that breaks the protocol in a session (crash, hang, garbage,
// unknown ids, an oversized line, an exit mid-run) makes that rule FAIL with
// the reason and the adapter's last stderr lines: the session adds the
// failure when it ends. Other sessions go on.
//
// Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "lizard/conformance/adapter_client.h"
#include "lizard/conformance/backend_factory.h"
#include "lizard/conformance/platform_host.h"

namespace lizard::conformance {

struct CommandFactoryOptions {
  // argv, deadlines, limits and schema checks for every adapter; `env` and
  // `rule` are set per session.
  AdapterOptions adapter;
  // The platform a profile's sessions get ("lizard": the embedded mock). A
  // profile without one runs without a platform view (its rules that need
  // one SKIP, as against a live platform).
  std::map<std::string, std::shared_ptr<PlatformProvider>> platforms;
};

std::unique_ptr<BackendFactory> make_command_factory(CommandFactoryOptions options);

}  // namespace lizard::conformance
