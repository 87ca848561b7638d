// Projects: list, and resolving a reference (ID, slug or name) to an ID.
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>

#include "ascii.h"
#include "lizard/api/client.h"
#include "wire_codec.h"

namespace lizard::api {

std::vector<ProjectInfo> Client::list_projects(const CallOptions& call) {
  const Exchange exchange{.method = "GET", .path = "/api/projects"};
  return internal::decode_projects(checked(exchange, call).body, operation(exchange));
}

std::string Client::resolve_project(std::string_view ref, const CallOptions& call) {
  static std::mutex cache_mutex;
  static std::map<std::string, std::string> cache;
  // The key is part of the cache key (different keys see different projects),
  // but only as a hash so the cache never holds the secret itself.
  const std::string cache_key = options_.api_url + '\0' +
                                std::to_string(std::hash<std::string>{}(options_.api_key)) + '\0' +
                                std::string(ref);
  {
    std::lock_guard lock(cache_mutex);
    const auto it = cache.find(cache_key);
    if (it != cache.end()) return it->second;
  }
  if (ref.empty()) {
    throw std::invalid_argument("a project (ID, slug or name) is required; set LIZARD_PROJECT_ID");
  }
  const std::string wanted = internal::ascii_lower(ref);
  std::vector<ProjectInfo> matches;
  for (auto& project : list_projects(call)) {
    if (internal::ascii_lower(project.id) == wanted ||
        internal::ascii_lower(project.slug) == wanted ||
        internal::ascii_lower(project.name) == wanted) {
      matches.push_back(std::move(project));
    }
  }
  if (matches.size() > 1) {
    throw ApiError(
        "project reference \"" + std::string(ref) + "\" is ambiguous; pass the project ID", 400,
        "PROJECT_AMBIGUOUS", {});
  }
  if (matches.empty()) {
    throw NotFoundError("project \"" + std::string(ref) + "\" not found", 404, "PROJECT_NOT_FOUND",
                        {});
  }
  std::lock_guard lock(cache_mutex);
  cache[cache_key] = matches.front().id;
  return matches.front().id;
}

}  // namespace lizard::api
