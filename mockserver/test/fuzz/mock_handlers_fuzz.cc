// The mock's request handlers (bodies, query strings, paths), through its
// HTTP front: one embedded MockServer and one sandbox for the whole run;
// each input is one request.
// Input: byte 0 picks the method and route, the rest is split at the first
// two 0xFF bytes into a path tail, a query string and a body.
// Properties: no crash (ASan/UBSan in the mock), every answer is one of the
// API's statuses, never 500 (an unhandled error in a handler), and every
// /api answer but a raw file read is a JSON document.
// Commands never come from the fuzzer: an exec body's "cmd" is replaced by
// ["true"] (the fuzzer must not spend its time starting processes).
#include <httplib.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "lizard/mock/mock_server.h"

namespace {

struct Route {
  const char* method;
  const char* prefix;  // "{s}" is the sandbox, "{p}" the project
};

constexpr Route kRoutes[] = {
    {"POST", "/api/sandboxes"},
    {"GET", "/api/sandboxes"},
    {"GET", "/api/sandboxes/{s}"},
    {"POST", "/api/sandboxes/{s}/timeout"},
    {"POST", "/api/sandboxes/{s}/exec"},
    {"GET", "/api/sandboxes/{s}/processes"},
    {"POST", "/api/sandboxes/{s}/processes/signal"},
    {"POST", "/api/sandboxes/{s}/files"},
    {"GET", "/api/sandboxes/{s}/files"},
    {"GET", "/api/sandboxes/{s}/files/list"},
    {"GET", "/api/sandboxes/{s}/files/stat"},
    {"DELETE", "/api/sandboxes/{s}/files"},
    {"POST", "/api/sandboxes/{s}/files/move"},
    {"POST", "/api/sandboxes/{s}/expose/"},
    {"GET", "/api/projects"},
    {"POST", "/api/projects"},
    {"GET", "/api/projects/"},
    {"POST", "/api/projects/{p}/volumes"},
    {"GET", "/api/projects/{p}/volumes/"},
    {"DELETE", "/api/projects/{p}/volumes/"},
    {"POST", "/api/workspaces"},
    {"POST", "/api/api-keys"},
    {"POST", "/api/account/api-keys"},
    {"GET", "/api/"},
    {"DELETE", "/api/sandboxes/{s}"},
};

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// Exec bodies keep every field but the command.
std::string defuse_exec(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse(body.data(), body.size());
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("cmd")) return body;
  rapidjson::Value cmd(rapidjson::kArrayType);
  cmd.PushBack(rapidjson::Value("true"), doc.GetAllocator());
  doc["cmd"] = cmd;
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  doc.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

struct State {
  std::unique_ptr<lizard::mock::MockServer> server;
  std::unique_ptr<httplib::Client> client;
  std::string sandbox;
  void ensure_sandbox() {
    if (!sandbox.empty()) {
      auto r = client->Get(("/api/sandboxes/" + sandbox).c_str());
      if (r && r->status == 200) return;
    }
    auto r = client->Post("/api/sandboxes", "{\"projectId\":\"" + server->project_id() + "\"}",
                          "application/json");
    if (!r || r->status != 201) std::abort();
    rapidjson::Document doc;
    doc.Parse(r->body.c_str());
    sandbox = doc["sandboxId"].GetString();
  }
};

State& state() {
  static State s = [] {
    State st;
    lizard::mock::MockOptions options;
    options.exec_limit = std::chrono::milliseconds(2000);
    options.max_body_bytes = 1 << 20;
    st.server = std::make_unique<lizard::mock::MockServer>(options);
    st.client = std::make_unique<httplib::Client>(st.server->url());
    st.client->set_default_headers({{"X-API-Key", st.server->api_key()}});
    st.client->set_read_timeout(30, 0);
    return st;
  }();
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  State& s = state();
  s.ensure_sandbox();
  const Route& route = kRoutes[data[0] % (sizeof kRoutes / sizeof kRoutes[0])];
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::size_t cut1 = rest.find('\xff');
  const std::size_t cut2 = cut1 == std::string::npos ? cut1 : rest.find('\xff', cut1 + 1);
  std::string tail = rest.substr(0, cut1);
  std::string query = cut1 == std::string::npos ? "" : rest.substr(cut1 + 1, cut2 - cut1 - 1);
  std::string body = cut2 == std::string::npos ? "" : rest.substr(cut2 + 1);
  // A request line cannot carry these; httplib would refuse to send it.
  for (auto* part : {&tail, &query}) {
    for (auto& c : *part) {
      if (c == '\r' || c == '\n' || c == ' ' || c == '\0' || c == '#' || c == '\t') c = '_';
    }
  }
  if (tail.find('?') != std::string::npos) tail.resize(tail.find('?'));
  std::string path =
      replace_all(replace_all(route.prefix, "{s}", s.sandbox), "{p}", s.server->project_id()) +
      tail;
  if (path.find("/exec") != std::string::npos) body = defuse_exec(body);
  if (!query.empty()) path += "?" + query;

  const std::string method = route.method;
  httplib::Result r = method == "GET" ? s.client->Get(path.c_str())
                      : method == "DELETE"
                          ? s.client->Delete(path.c_str(), body, "application/json")
                          : s.client->Post(path.c_str(), body, "application/json");
  if (!r) {
    // A request httplib could not send (an invalid path) is not a finding.
    return 0;
  }
  const int status = r->status;
  if (status == 500) {
    std::fprintf(stderr, "500 for %s %s: %s\n", route.method, path.c_str(), r->body.c_str());
    std::abort();
  }
  const bool known = status == 200 || status == 201 || status == 400 || status == 403 ||
                     status == 404 || status == 405 || status == 409 || status == 413 ||
                     status == 501 || status == 414;
  if (!known) {
    std::fprintf(stderr, "status %d for %s %s\n", status, route.method, path.c_str());
    std::abort();
  }
  const bool raw_read = method == "GET" && status == 200 &&
                        path.find("/files?") != std::string::npos &&
                        path.find("/files/") == std::string::npos;
  if (!raw_read && path.rfind("/api/", 0) == 0 && status != 414) {
    rapidjson::Document doc;
    doc.Parse(r->body.data(), r->body.size());
    if (doc.HasParseError()) {
      std::fprintf(stderr, "not JSON (%d) for %s %s: %.200s\n", status, route.method, path.c_str(),
                   r->body.c_str());
      std::abort();
    }
  }
  return 0;
}
