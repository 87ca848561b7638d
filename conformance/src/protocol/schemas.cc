#include "schemas.h"

// "pattern" through std::regex, whose matching of a const regex any number
// of threads may share. RapidJSON's own regex (1.1.0) keeps its match state
// in the compiled schema: two threads validating at once (one connection's
// reader and another's, or a rule sending a request) raced on it, as
// ThreadSanitizer showed, and could judge a valid message invalid. Only
// this file includes rapidjson/schema.h. (1.1.0's header takes any
// definition of the first macro as "not internal", and then uses std::regex
// only if the second is left undefined.)
#define RAPIDJSON_SCHEMA_USE_INTERNALREGEX 0
#include <rapidjson/pointer.h>
#include <rapidjson/schema.h>
#include <rapidjson/stringbuffer.h>

#include <map>
#include <memory>
#include <stdexcept>

#include "lizard/protocol_schemas.h"  // generated: kEmbeddedSchemas
#include "wire.h"

namespace lizard::conformance::protocol {

namespace {

struct MethodSchema {
  const char* method;
  const char* file;
  bool notification;
};

constexpr MethodSchema kMethods[] = {
    {"initialize", "initialize.json", false},
    {"backend/new", "backend-new.json", false},
    {"backend/attach", "backend-attach.json", false},
    {"backend/ref", "backend-ref.json", false},
    {"backend/destroy", "backend-destroy.json", false},
    {"backend/drop", "backend-drop.json", false},
    {"environment/destroy", "environment-destroy.json", false},
    {"run", "run.json", false},
    {"fs/read", "fs-read.json", false},
    {"fs/write", "fs-write.json", false},
    {"fs/stat", "fs-stat.json", false},
    {"fs/list", "fs-list.json", false},
    {"fs/make_dir", "fs-make_dir.json", false},
    {"fs/remove", "fs-remove.json", false},
    {"fs/exists", "fs-exists.json", false},
    {"fs/realpath", "fs-realpath.json", false},
    {"$/ping", "ping.json", false},
    {"$/cancelRequest", "cancel-request.json", true},
};

const MethodSchema* find_method(std::string_view method) {
  for (const auto& m : kMethods) {
    if (method == m.method) return &m;
  }
  return nullptr;
}

std::string pointer_text(const rapidjson::Pointer& pointer) {
  rapidjson::StringBuffer buffer;
  pointer.StringifyUriFragment(buffer);
  return buffer.GetString();
}

}  // namespace

struct ProtocolSchemas::Impl : rapidjson::IRemoteSchemaDocumentProvider {
  // The source documents, kept for the compiled ones that point into them.
  std::map<std::string, std::unique_ptr<rapidjson::Document>, std::less<>> sources;
  std::map<std::string, std::unique_ptr<rapidjson::SchemaDocument>, std::less<>> files;
  // One root per "file#/definitions/part": {"$ref": <where it finally points>}.
  std::map<std::string, std::unique_ptr<rapidjson::Document>, std::less<>> root_sources;
  std::map<std::string, std::unique_ptr<rapidjson::SchemaDocument>, std::less<>> roots;

  const rapidjson::SchemaDocument* GetRemoteDocument(const char* uri,
                                                     rapidjson::SizeType length) override {
    // RapidJSON 1.1.0 passes the name without its last character; accept both.
    const std::string_view asked(uri, length);
    for (const auto& [name, doc] : files) {
      if (name == asked ||
          (name.size() == asked.size() + 1 && name.compare(0, length, asked) == 0)) {
        return doc.get();
      }
    }
    return nullptr;
  }

  // Follows "$ref" chains by hand: RapidJSON finds a referenced schema only
  // when the target is a schema of its own, not a bare reference.
  std::string resolve(std::string target) const {
    for (int hops = 0; hops < 16; ++hops) {
      const auto hash = target.find('#');
      const std::string file = target.substr(0, hash);
      auto it = sources.find(file);
      if (it == sources.end()) throw std::logic_error("schema reference to unknown file " + target);
      rapidjson::Pointer pointer(target.substr(hash + 1).c_str());
      const rapidjson::Value* v = pointer.IsValid() ? pointer.Get(*it->second) : nullptr;
      if (v == nullptr) throw std::logic_error("schema reference does not resolve: " + target);
      const rapidjson::Value* next = member(*v, "$ref");
      if (next == nullptr || !next->IsString()) return target;
      std::string ref = next->GetString();
      target = ref.front() == '#' ? file + ref : ref;
    }
    throw std::logic_error("schema reference loop at " + target);
  }

  const rapidjson::SchemaDocument& root(const std::string& file, const std::string& part) {
    const std::string key = file + "#/definitions/" + part;
    auto it = roots.find(key);
    if (it != roots.end()) return *it->second;
    auto source = std::make_unique<rapidjson::Document>();
    source->SetObject();
    const std::string target = resolve(key);
    source->AddMember("$ref", rapidjson::Value(target.c_str(), source->GetAllocator()),
                      source->GetAllocator());
    auto compiled = std::make_unique<rapidjson::SchemaDocument>(*source, this);
    const auto& result = *compiled;
    root_sources[key] = std::move(source);
    roots[key] = std::move(compiled);
    return result;
  }

  const rapidjson::SchemaDocument* find_root(const std::string& file,
                                             const std::string& part) const {
    auto it = roots.find(file + "#/definitions/" + part);
    return it == roots.end() ? nullptr : it->second.get();
  }
};

ProtocolSchemas::ProtocolSchemas() : impl_(new Impl) {
  // common.json first: every other file refers to it.
  std::vector<std::string> order = {"common.json", "message.json"};
  for (const auto& e : kEmbeddedSchemas) {
    if (e.file != "common.json" && e.file != "message.json") order.emplace_back(e.file);
  }
  for (const auto& name : order) {
    for (const auto& e : kEmbeddedSchemas) {
      if (e.file != name) continue;
      auto doc = std::make_unique<rapidjson::Document>();
      doc->Parse(e.text.data(), e.text.size());
      if (doc->HasParseError() || !doc->IsObject()) {
        throw std::logic_error("the embedded schema " + name + " is not a JSON object");
      }
      impl_->files[name] = std::make_unique<rapidjson::SchemaDocument>(*doc, impl_);
      impl_->sources[name] = std::move(doc);
    }
  }
  for (const char* part : {"request", "notification", "response", "error"}) {
    impl_->root("message.json", part);
  }
  for (const auto& m : kMethods) {
    impl_->root(m.file, "params");
    if (!m.notification) impl_->root(m.file, "result");
  }
}

ProtocolSchemas::~ProtocolSchemas() { delete impl_; }

const ProtocolSchemas& ProtocolSchemas::get() {
  static const ProtocolSchemas schemas;
  return schemas;
}

std::vector<std::string> ProtocolSchemas::methods() {
  std::vector<std::string> out;
  for (const auto& m : kMethods) out.emplace_back(m.method);
  return out;
}

std::string ProtocolSchemas::file_of(std::string_view method) {
  const MethodSchema* m = find_method(method);
  return m ? m->file : "";
}

std::string ProtocolSchemas::check(std::string_view method, std::string_view part,
                                   const rapidjson::Value& value) const {
  const std::string file = method.empty() ? "message.json" : file_of(method);
  if (file.empty()) return "no schema for method '" + std::string(method) + "'";
  const rapidjson::SchemaDocument* schema = impl_->find_root(file, std::string(part));
  if (schema == nullptr) return "no schema " + file + "#/definitions/" + std::string(part);
  rapidjson::SchemaValidator validator(*schema);
  if (value.Accept(validator)) return "";
  return "at '" + pointer_text(validator.GetInvalidDocumentPointer()) + "': fails '" +
         validator.GetInvalidSchemaKeyword() + "' of " + file + "#/definitions/" +
         std::string(part) + pointer_text(validator.GetInvalidSchemaPointer()).substr(1);
}

std::string ProtocolSchemas::check_request(const rapidjson::Value& message) const {
  if (std::string why = check("", "request", message); !why.empty()) return why;
  const rapidjson::Value& method = *member(message, "method");
  const MethodSchema* m = find_method(method.GetString());
  if (m == nullptr || m->notification) {
    return std::string("no request method '") + method.GetString() + "'";
  }
  return check(m->method, "params", *member(message, "params"));
}

std::string ProtocolSchemas::check_notification(const rapidjson::Value& message) const {
  if (std::string why = check("", "notification", message); !why.empty()) return why;
  const rapidjson::Value& method = *member(message, "method");
  const MethodSchema* m = find_method(method.GetString());
  if (m == nullptr || !m->notification) {
    return std::string("no notification '") + method.GetString() + "'";
  }
  return check(m->method, "params", *member(message, "params"));
}

std::string ProtocolSchemas::check_response(std::string_view method,
                                            const rapidjson::Value& message) const {
  if (std::string why = check("", "response", message); !why.empty()) return why;
  if (const rapidjson::Value* result = member(message, "result")) {
    return check(method, "result", *result);
  }
  return "";
}

}  // namespace lizard::conformance::protocol
