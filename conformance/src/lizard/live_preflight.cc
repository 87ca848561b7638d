#include "live_preflight.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "lizard/api/client.h"
#include "lizard/workspace/errors.h"

namespace lizard::conformance::internal {

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

[[noreturn]] void fail(const std::string& sentence) { throw std::runtime_error(sentence); }

// The project `wanted` names among those the key sees (as Client::
// resolve_project matches: ID, slug or name, case-insensitive).
std::string find_project(const std::vector<api::ProjectInfo>& projects, const std::string& wanted) {
  std::vector<const api::ProjectInfo*> matches;
  std::string seen;
  for (const auto& p : projects) {
    if (lower(p.id) == lower(wanted) || lower(p.slug) == lower(wanted) ||
        lower(p.name) == lower(wanted)) {
      matches.push_back(&p);
    }
    seen += (seen.empty() ? "" : ", ") + (p.slug.empty() ? p.id : p.slug);
  }
  if (matches.size() == 1) return matches.front()->id;
  if (matches.size() > 1) {
    fail("LIZARD_PROJECT_ID='" + wanted + "' matches several projects; set it to the project's ID");
  }
  fail("LIZARD_PROJECT_ID='" + wanted + "' names no project this key can see (it sees: " +
       (seen.empty() ? "none" : seen) + "); fix LIZARD_PROJECT_ID");
}

// GET /api/projects: the key's and the endpoint's check.
std::vector<api::ProjectInfo> list_projects(api::Client& client, const std::string& url) {
  try {
    return client.list_projects();
  } catch (const workspace::WorkspaceAuthenticationError& e) {
    fail("the API rejected the key in LIZARD_API_KEY (" + std::string(e.what()) +
         "); set LIZARD_API_KEY to a valid key for " + url);
  } catch (const workspace::WorkspaceTransientError& e) {
    fail("cannot reach the API at " + url + " (" + e.what() + "); check LIZARD_API_URL");
  } catch (const std::exception& e) {
    fail("GET /api/projects at " + url + " failed (" + e.what() +
         "); check LIZARD_API_URL and LIZARD_API_KEY");
  }
}

// The probe create's failure as one sentence naming what to fix.
[[noreturn]] void create_failed(const std::exception& e, const LizardLiveFactoryOptions& options) {
  const std::string project = "LIZARD_PROJECT_ID='" + options.base.project + "'";
  if (dynamic_cast<const workspace::WorkspaceAuthenticationError*>(&e) != nullptr) {
    fail("the key in LIZARD_API_KEY may not create sandboxes in " + project + " (" + e.what() +
         "); use a key with access to that project");
  }
  if (dynamic_cast<const api::PaymentRequiredError*>(&e) != nullptr) {
    fail("the account of LIZARD_API_KEY cannot pay for a sandbox (" + std::string(e.what()) + ")");
  }
  if (const auto* api = dynamic_cast<const api::ApiError*>(&e)) {
    if (api->code() == "INVALID_TEMPLATE" ||
        lower(api->what()).find("template") != std::string::npos) {
      fail("the template '" + options.base.template_name +
           "' the suite needs is not available in " + project + " (" + e.what() + ")");
    }
  }
  fail("a probe sandbox could not be created in " + project + " (" + e.what() +
       "); check LIZARD_PROJECT_ID and LIZARD_API_KEY");
}

// One small sandbox, tagged as the run's, deleted at once.
void probe_create(api::Client& client, const std::string& project_id,
                  const LizardLiveFactoryOptions& options, LiveLedger& ledger) {
  const auto since = ledger.reserve();
  api::CreateSandboxRequest request;
  request.template_name = options.base.template_name;
  request.project_id = project_id;
  request.size = options.size;
  request.timeout_ms = 120000;  // gone by itself two minutes later, whatever happens here
  request.metadata = {{kRunTag, options.run_id}, {kRuleTag, "preflight"}};
  std::string id;
  try {
    id = client.create_sandbox(request).sandbox_id;
  } catch (const std::exception& e) {
    create_failed(e, options);
  }
  const std::string ref = workspace::WorkspaceRef{"lizard", id}.to_string();
  ledger.created(ref, since);
  bool deleted = false;
  try {
    // The tags where lizard-sweep finds them on platforms that drop metadata.
    client.write_text_file(
        id, workspace::kTagsFile,
        std::string(kRunTag) + "=" + options.run_id + "\n" + kRuleTag + "=preflight\n");
    client.kill_sandbox(id);
    deleted = true;
  } catch (const std::exception&) {
    try {
      client.kill_sandbox(id);
      deleted = true;
    } catch (const std::exception&) {
    }
  }
  ledger.deleted(ref, deleted);
}

}  // namespace

void live_preflight(const LizardLiveFactoryOptions& options, LiveLedger& ledger) {
  const auto& base = options.base;
  if (base.api_key.empty()) fail("LIZARD_API_KEY is not set; set it to your Lizard API key");
  if (base.project.empty()) {
    fail("LIZARD_PROJECT_ID is not set; set it to the project's ID, slug or name");
  }
  api::ClientOptions client_options;
  client_options.api_key = base.api_key;
  client_options.api_url = base.api_url;
  client_options.project = base.project;
  client_options.request_timeout = std::chrono::seconds(60);
  api::Client client(client_options);
  const std::string project_id = find_project(list_projects(client, base.api_url), base.project);
  probe_create(client, project_id, options, ledger);
}

}  // namespace lizard::conformance::internal
