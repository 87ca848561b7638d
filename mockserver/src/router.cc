#include "router.h"

#include <httplib.h>

#include "api_error.h"

namespace lizard::mock::internal {
namespace {

bool match(const std::vector<std::string>& pattern, const std::vector<std::string>& path,
           std::vector<std::string>& params) {
  params.clear();
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const std::string& p = pattern[i];
    if (p == "**") return true;
    if (i >= path.size()) return false;
    if (p.size() >= 2 && p.front() == '{' && p.back() == '}') {
      params.push_back(path[i]);
    } else if (p != path[i]) {
      return false;
    }
  }
  return pattern.size() == path.size();
}

}  // namespace

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < path.size()) {
    std::size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out.emplace_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

const std::string* Call::query(const char* name) const {
  auto it = req.params.find(name);
  return it == req.params.end() ? nullptr : &it->second;
}

void Call::reply(int status, const std::string& json) const {
  res.status = status;
  res.set_content(json, "application/json");
}

void Router::add(std::string method, std::string_view pattern, Handler handler) {
  routes_.push_back(Route{std::move(method), split_path(pattern), std::move(handler)});
}

const Handler& Router::find(const std::string& method, const std::string& path,
                            std::vector<std::string>& params) const {
  const auto segments = split_path(path);
  bool other_method = false;
  for (const auto& r : routes_) {
    if (!match(r.segments, segments, params)) continue;
    if (r.method == "*" || r.method == method) return r.handler;
    other_method = true;
  }
  params.clear();
  if (other_method) method_not_allowed();
  api_error(404, "Not found", "NOT_FOUND");
}

}  // namespace lizard::mock::internal
