// The wire format of the backend protocol (docs/protocol.md), shared by the
// runner's side (the adapter client) and the adapter's side (the server):
// base64 bytes, text that may not be UTF-8, refs, entries, errno names, and
// the one table that maps the contract's errors to error objects and back.
//
// Pure functions; thread-safe.
#pragma once

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "lizard/workspace/types.h"

namespace lizard::conformance::protocol {

// RapidJSON's writer, and a string value written in place.
class Writer : public rapidjson::Writer<rapidjson::StringBuffer> {
 public:
  explicit Writer(rapidjson::StringBuffer& out) : rapidjson::Writer<rapidjson::StringBuffer>(out) {}

  // A string value of `size` characters that need no escaping, which
  // `fill(char* at)` writes in place: no copy, and no per-character pass of
  // the writer (1.4 MB for a 1 MiB file's base64).
  template <typename Fill>
  void UnescapedString(std::size_t size, Fill&& fill) {
    Prefix(rapidjson::kStringType);
    // Room for what usually follows too (the closing brackets of the
    // message), so the buffer does not grow, and copy, once more.
    os_->Reserve(size + 64);
    char* at = os_->Push(size + 2);
    at[0] = '"';
    fill(at + 1);
    at[size + 1] = '"';
    EndValue(true);
  }
};

// JSON-RPC error codes: the standard ones for protocol failures, and the one
// every contract error carries (its kind in error.data.kind).
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kContractError = -32000;

// RFC 4648 base64 with padding (base64.cc).
std::string base64_encode(std::string_view bytes);
// The length of the base64 of `bytes` bytes, and the encoding written to
// `out`, which has that room.
std::size_t base64_size(std::size_t bytes);
void base64_encode_to(std::string_view bytes, char* out);
// nullopt when `text` is not canonical padded base64.
std::optional<std::string> base64_decode(std::string_view text);

// Text: a JSON string when `text` is valid UTF-8, else {"b64": "<base64>"}.
void write_text(Writer& w, std::string_view text);
// A JSON string whatever the bytes, repaired to UTF-8 first (U+FFFD): where
// the protocol has a string and never Text (messages, names, secrets).
void write_utf8_string(Writer& w, std::string_view text);
// Bytes: always a base64 string.
void write_bytes(Writer& w, std::string_view bytes);
// The value of a Text field, or nullopt when it is neither form.
std::optional<std::string> read_text(const rapidjson::Value& v);
// The value of a Bytes field, or nullopt when it is not a base64 string.
std::optional<std::string> read_bytes(const rapidjson::Value& v);

// {"provider": Text, "id": Text}
void write_ref(Writer& w, const workspace::WorkspaceRef& ref);
std::optional<workspace::WorkspaceRef> read_ref(const rapidjson::Value& v);

// Variables as [[Text, Text], ...] (a name may be bytes that are not UTF-8).
void write_env(Writer& w, const std::map<std::string, std::string>& env);
// nullopt when `v` is not such an array.
std::optional<std::map<std::string, std::string>> read_env(const rapidjson::Value& v);

// {"name": Text, "path": Text, "is_dir": bool, "size"?: integer}
void write_entry(Writer& w, const workspace::FileEntry& entry);
std::optional<workspace::FileEntry> read_entry(const rapidjson::Value& v);

// A timeout in seconds: a number, or "NaN", "Infinity", "-Infinity" (JSON
// has no such numbers, and the contract must see them to reject them).
void write_seconds(Writer& w, double seconds);
std::optional<double> read_seconds(const rapidjson::Value& v);

// "ENOENT" for std::errc::no_such_file_or_directory; empty for a code this
// table does not name. And back: nullopt for an unknown name.
std::string errno_name(std::error_code code);
std::optional<std::errc> errc_from_name(std::string_view name);

// A member of an object, or nullptr (never operator[] on what an adapter sent).
const rapidjson::Value* member(const rapidjson::Value& object, const char* name);

// Writes the error object {"code", "message", "data": {"kind", ...}} for the
// exception being handled (call from a catch block). Messages are the
// exception's what(), made valid UTF-8.
void write_current_exception(Writer& w);

// Throws the contract's exception an error object describes. Returns the
// reason when the object is not one the protocol defines (the caller treats
// that as a protocol fault), and never returns otherwise.
std::string throw_error_object(const rapidjson::Value& error);

}  // namespace lizard::conformance::protocol
