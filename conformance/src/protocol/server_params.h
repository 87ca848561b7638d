// The adapter's reading of a request (server.cc): the JSON-RPC errors a
// request's params or method are answered with, and the params read as the
// protocol has them (docs/protocol.md), each missing or malformed one an
// InvalidParams naming it.
#pragma once

#include <map>
#include <stdexcept>
#include <string>

#include "lizard/conformance/platform_control.h"
#include "wire.h"

namespace lizard::conformance::serve {

// Params that are not what the method takes: answered -32602.
class InvalidParams : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A method the protocol does not have: -32601.
class MethodNotFound : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A request the adapter takes no part in yet (before initialize): -32600.
class InvalidRequest : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `v` as compact JSON text (an id, a handle, for answers and messages).
std::string serialize(const rapidjson::Value& v);

// params.NAME, which must be there.
const rapidjson::Value& need(const rapidjson::Value& params, const char* name);
// params.NAME as Text (a string of UTF-8, or {"b64"}).
std::string need_text(const rapidjson::Value& params, const char* name);
// params.NAME as a Ref.
workspace::WorkspaceRef need_ref(const rapidjson::Value& params, const char* name);
// An env: [[Text, Text], ...].
std::map<std::string, std::string> read_env(const rapidjson::Value& v);
// backend/new's overrides (size, lifetime_ms, env, api_key, ref).
BackendOverrides read_overrides(const rapidjson::Value& o);

}  // namespace lizard::conformance::serve
