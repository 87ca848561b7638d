// The protocol's JSON Schemas (conformance/schemas/protocol/, compiled into
// the library) and a validator for whole messages: the envelope, then the
// params or result of the method. RapidJSON's draft-04 validator.
//
// Thread-safe: the compiled schemas are immutable; each check makes its own
// validator.
#pragma once

#include <rapidjson/document.h>

#include <string>
#include <string_view>
#include <vector>

namespace lizard::conformance::protocol {

class ProtocolSchemas {
 public:
  // Compiled once, on first use. Aborts (std::logic_error) when an embedded
  // schema does not parse or a reference does not resolve: a build defect.
  static const ProtocolSchemas& get();

  // "" when the message matches, else where and why it does not. An unknown
  // method is a mismatch.
  std::string check_request(const rapidjson::Value& message) const;
  std::string check_notification(const rapidjson::Value& message) const;
  // A response to a request of `method` (success or error).
  std::string check_response(std::string_view method, const rapidjson::Value& message) const;

  // Every method that has a schema (requests, then notifications).
  static std::vector<std::string> methods();
  // The schema file of a method ("fs/read" -> "fs-read.json"); "" when none.
  static std::string file_of(std::string_view method);

  // Checks `value` against the definition `part` ("params" or "result") of
  // `method`, or of `message.json` when method is "" (part "request",
  // "response", ...). For tests.
  std::string check(std::string_view method, std::string_view part,
                    const rapidjson::Value& value) const;

  ~ProtocolSchemas();
  ProtocolSchemas(const ProtocolSchemas&) = delete;
  ProtocolSchemas& operator=(const ProtocolSchemas&) = delete;

 private:
  ProtocolSchemas();
  struct Impl;
  Impl* impl_;
};

}  // namespace lizard::conformance::protocol
