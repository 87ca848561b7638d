// A platform that a rule session starts for a backend living in another
// process: the command factory (command_factory.h) starts one per session
// for an adapter of the lizard profile, passes it the platform's address in
// environment variables, and gives the rules the platform's view.
//
// Thread safety: a PlatformProvider may be used from several threads at once
// (rules run in parallel); a PlatformHost is used by one session, whose rule
// may call its control() from several threads (PlatformControl is
// thread-safe).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lizard/conformance/backend_factory.h"
#include "lizard/conformance/platform_control.h"
#include "lizard/conformance/rules.h"

namespace lizard::conformance {

// One running platform for one rule session. Destroying it stops it.
class PlatformHost {
 public:
  virtual ~PlatformHost() = default;
  // What an out-of-process backend needs to reach the platform, as
  // environment variables (the Lizard mock: LIZARD_API_URL, LIZARD_API_KEY,
  // LIZARD_PROJECT_ID), exactly as a user's live run would set them.
  virtual std::map<std::string, std::string> environment() const = 0;
  // Strings that must never leak (the API key).
  virtual std::vector<std::string> secrets() const = 0;
  // The platform's journal, faults, clock and exec limit. Its make_with()
  // and log_lines() concern backends built in this process; a session whose
  // backends live elsewhere answers those itself.
  virtual PlatformControl& control() = 0;
};

// Starts a PlatformHost per session.
class PlatformProvider {
 public:
  virtual ~PlatformProvider() = default;
  // Shown in reports ("embedded mock, kubernetes era").
  virtual std::string name() const = 0;
  // Throws std::runtime_error with what to fix when no platform can start
  // here (BackendFactory::preflight).
  virtual void preflight() {}
  // A platform for one rule (a rule may ask for a shorter exec limit).
  virtual std::unique_ptr<PlatformHost> open(const RuleInfo& rule) = 0;
  // The process is about to end without destroying its hosts.
  virtual void abandon() {}
};

}  // namespace lizard::conformance
