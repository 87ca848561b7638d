#include "server_params.h"

#include <chrono>
#include <utility>

namespace lizard::conformance::serve {

using protocol::member;

std::string serialize(const rapidjson::Value& v) {
  rapidjson::StringBuffer buffer;
  protocol::Writer w(buffer);
  v.Accept(w);
  return std::string(buffer.GetString(), buffer.GetSize());
}

const rapidjson::Value& need(const rapidjson::Value& params, const char* name) {
  const rapidjson::Value* v = member(params, name);
  if (v == nullptr) throw InvalidParams(std::string("missing params.") + name);
  return *v;
}

std::string need_text(const rapidjson::Value& params, const char* name) {
  auto text = protocol::read_text(need(params, name));
  if (!text) throw InvalidParams(std::string("params.") + name + " is not Text");
  return std::move(*text);
}

workspace::WorkspaceRef need_ref(const rapidjson::Value& params, const char* name) {
  auto ref = protocol::read_ref(need(params, name));
  if (!ref) throw InvalidParams(std::string("params.") + name + " is not a Ref");
  return std::move(*ref);
}

std::map<std::string, std::string> read_env(const rapidjson::Value& v) {
  auto env = protocol::read_env(v);
  if (!env) throw InvalidParams("env is not an array of [Text, Text] pairs");
  return std::move(*env);
}

BackendOverrides read_overrides(const rapidjson::Value& o) {
  if (!o.IsObject()) throw InvalidParams("overrides is not an object");
  BackendOverrides out;
  if (const rapidjson::Value* v = member(o, "size")) {
    auto text = protocol::read_text(*v);
    if (!text) throw InvalidParams("overrides.size is not Text");
    out.size = *text;
  }
  if (const rapidjson::Value* v = member(o, "lifetime_ms")) {
    if (!v->IsInt64()) throw InvalidParams("overrides.lifetime_ms is not an integer");
    out.lifetime = std::chrono::milliseconds(v->GetInt64());
  }
  if (const rapidjson::Value* v = member(o, "env")) out.env = read_env(*v);
  if (const rapidjson::Value* v = member(o, "api_key")) {
    if (!v->IsString()) throw InvalidParams("overrides.api_key is not a string");
    out.api_key = std::string(v->GetString(), v->GetStringLength());
  }
  if (member(o, "ref") != nullptr) out.ref = need_ref(o, "ref");
  return out;
}

}  // namespace lizard::conformance::serve
