// Conformance factories for LizardSandboxBackend (target
// lizard_conformance_lizard): on the embedded mock of the Lizard API, and on
// the real API.
//
// Thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "lizard/conformance/backend_factory.h"
#include "lizard/conformance/platform_control.h"
#include "lizard/conformance/platform_host.h"
#include "lizard/mock/mock_server.h"
#include "lizard/workspace/lizard_sandbox_backend.h"

namespace lizard::conformance {

struct LizardMockFactoryOptions {
  // The mock's per-request exec limit in sessions of rules that exercise it
  // (RuleInfo::wants_short_exec_limit); other sessions keep the API's 600 s.
  std::chrono::milliseconds short_exec_limit{1500};
  // The platform era the mock plays (docs/mockserver.md, "Eras"): the
  // kubernetes era (the default) ignores an exec's envs, workdir and user and
  // create metadata, and takes only UTF-8 uploads.
  mock::Era era = mock::Era::kKubernetes;
};

// One embedded lizard::mock::MockServer per session (per rule), so journals,
// faults and the clock never mix between rules running at once. The
// sessions' PlatformControl is the mock's journal, faults and clock.
std::unique_ptr<BackendFactory> make_lizard_mock_factory(LizardMockFactoryOptions options = {});

// The sessions of make_lizard_mock_factory() also implement this: the options
// their backends are built with (the mock's URL, key and project), for tools
// that send requests of their own to the same mock, such as the mutants.
// Reach it with dynamic_cast from a BackendSession. Thread-safe.
class LizardMockSessionAccess {
 public:
  virtual ~LizardMockSessionAccess() = default;
  virtual const workspace::LizardOptions& lizard_options() const = 0;
};

// The same embedded mock, one per session, for backends in another process:
// the command factory's platform for adapters of the lizard profile
// (`lizard-conformance --backend command`). Each host passes LIZARD_API_URL,
// LIZARD_API_KEY and LIZARD_PROJECT_ID; its control() is the mock's journal,
// faults and clock (the view the in-process sessions give their rules).
std::shared_ptr<PlatformProvider> make_mock_platform_provider(
    LizardMockFactoryOptions options = {});

// Sessions on one existing Lizard endpoint (`base`: URL, key, project; usually
// LizardOptions::from_environment()), for an adapter that serves
// LizardSandboxBackend to a runner that started the platform
// (lizard-workspace-serve --backend lizard). Backends are built from `base`
// with LizardOptions' defaults (size, lifetime), like the mock sessions'.
// The sessions' PlatformControl builds backends with overrides (make_with);
// the journal, faults and clock live with the runner, so its other members
// throw std::logic_error. The sessions implement LizardMockSessionAccess.
std::unique_ptr<BackendFactory> make_lizard_endpoint_factory(workspace::LizardOptions base);

// A test seam for adapters that serve the mutants (lizard-workspace-serve
// --mutant NAME): from this call on, make_lizard_mock_factory() returns
// make_lizard_endpoint_factory(endpoint), so factories built on it (the
// lizard mutants' base) drive the platform the runner started instead of
// embedded mocks of their own. Call once, before any factory is made; never
// in the runner.
void use_endpoint_for_mock_factories(workspace::LizardOptions endpoint);

struct LizardLiveFactoryOptions {
  // Key, project and URL (usually LizardOptions::from_environment()).
  workspace::LizardOptions base;
  // Tags every sandbox ("lizard-conformance-run": run_id) so a run's
  // sandboxes can be found and cleaned up. Empty: a random ID.
  std::string run_id;
  std::string size = "small";
  std::chrono::milliseconds lifetime{std::chrono::minutes(10)};
  double dollars_per_hour = 0.0162;  // the price of `size`
  // The budget: past it no sandbox is created and the rules not yet started
  // FAIL with "budget reached" (BackendFactory::exhausted_budget()). Creates
  // attempted (the preflight's probe included); 0: no limit.
  int max_sandboxes = 0;
  // Sandbox-seconds (each sandbox from its create to its delete, or to now);
  // 0: no limit.
  double max_sandbox_seconds = 0;
};

// The real API. preflight() checks LIZARD_API_KEY, LIZARD_PROJECT_ID, the
// key, the project and one probe create (deleted at once) and throws one
// sentence naming the variable to fix. Sessions offer a platform view with
// backends with overrides and the journal of their own backends' requests
// (no bodies, faults or clock: the lizard.* rules that need those SKIP).
// Every sandbox is deleted when its rule ends; report_notes() lists the
// sandboxes created, deleted and left behind, a cost estimate and the budget.
std::unique_ptr<BackendFactory> make_lizard_live_factory(LizardLiveFactoryOptions options);

}  // namespace lizard::conformance
