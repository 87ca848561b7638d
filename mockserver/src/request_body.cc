#include "request_body.h"

#include "api_error.h"
#include "json.h"

namespace lizard::mock::internal {
namespace {

[[noreturn]] void bad(const char* name, const char* what) {
  api_error(400, std::string("'") + name + "' must be " + what, "BAD_REQUEST");
}

}  // namespace

RequestBody::RequestBody(std::string& text, bool allow_empty) {
  if (allow_empty && text.find_first_not_of(" \t\r\n") == std::string::npos) {
    doc_.SetObject();
    return;
  }
  std::string err;
  if (!parse_json_in_place(text, doc_, err)) api_error(400, err, "BAD_REQUEST");
  if (!doc_.IsObject()) api_error(400, "The request body must be a JSON object", "BAD_REQUEST");
}

const rapidjson::Value* RequestBody::get(const char* name) const {
  auto it = doc_.FindMember(name);
  if (it == doc_.MemberEnd() || it->value.IsNull()) return nullptr;
  return &it->value;
}

std::optional<std::string> RequestBody::str(const char* name) const {
  const auto v = view(name);
  if (!v) return std::nullopt;
  return std::string(*v);
}

std::optional<std::string_view> RequestBody::view(const char* name) const {
  const rapidjson::Value* v = get(name);
  if (!v) return std::nullopt;
  if (!v->IsString()) bad(name, "a string");
  return std::string_view(v->GetString(), v->GetStringLength());
}

std::optional<std::int64_t> RequestBody::integer(const char* name) const {
  const rapidjson::Value* v = get(name);
  if (!v) return std::nullopt;
  if (v->IsInt64()) return v->GetInt64();
  if (v->IsDouble()) {
    double d = v->GetDouble();
    // The range first: casting an out-of-range double is undefined (the
    // fuzzer's {"sizeGb":1e308} found it).
    if (d > -9e18 && d < 9e18 && d == static_cast<double>(static_cast<std::int64_t>(d)))
      return static_cast<std::int64_t>(d);
  }
  bad(name, "an integer");
}

std::optional<bool> RequestBody::boolean(const char* name) const {
  const rapidjson::Value* v = get(name);
  if (!v) return std::nullopt;
  if (!v->IsBool()) bad(name, "a boolean");
  return v->GetBool();
}

std::vector<std::pair<std::string, std::string>> RequestBody::env_map(const char* name) const {
  std::vector<std::pair<std::string, std::string>> out;
  const rapidjson::Value* v = get(name);
  if (!v) return out;
  if (!v->IsObject()) bad(name, "an object of strings");
  for (auto it = v->MemberBegin(); it != v->MemberEnd(); ++it) {
    if (!it->value.IsString()) bad(name, "an object of strings");
    std::string k = string_of(it->name);
    std::string val = string_of(it->value);
    if (k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos ||
        val.find('\0') != std::string::npos)
      api_error(400, "Invalid environment variable name or value", "BAD_REQUEST");
    out.emplace_back(std::move(k), std::move(val));
  }
  return out;
}

std::vector<std::string> RequestBody::string_list(const char* name) const {
  std::vector<std::string> out;
  const rapidjson::Value* v = get(name);
  if (!v) return out;
  if (!v->IsArray()) bad(name, "an array");
  for (const auto& x : v->GetArray()) {
    if (!x.IsString()) bad(name, "an array of strings");
    out.push_back(string_of(x));
  }
  return out;
}

}  // namespace lizard::mock::internal
