#include "wire.h"

#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include "lizard/workspace/errors.h"
#include "lizard/workspace/utf8.h"

namespace lizard::conformance::protocol {

namespace {

struct ErrnoName {
  int value;
  const char* name;
};

#define LIZARD_ERRNO(e) \
  { e, #e }
// The POSIX errno values (Linux spellings); a path error names one of these.
constexpr ErrnoName kErrnoNames[] = {
    LIZARD_ERRNO(EPERM),        LIZARD_ERRNO(ENOENT),
    LIZARD_ERRNO(ESRCH),        LIZARD_ERRNO(EINTR),
    LIZARD_ERRNO(EIO),          LIZARD_ERRNO(ENXIO),
    LIZARD_ERRNO(E2BIG),        LIZARD_ERRNO(ENOEXEC),
    LIZARD_ERRNO(EBADF),        LIZARD_ERRNO(ECHILD),
    LIZARD_ERRNO(EAGAIN),       LIZARD_ERRNO(ENOMEM),
    LIZARD_ERRNO(EACCES),       LIZARD_ERRNO(EFAULT),
    LIZARD_ERRNO(EBUSY),        LIZARD_ERRNO(EEXIST),
    LIZARD_ERRNO(EXDEV),        LIZARD_ERRNO(ENODEV),
    LIZARD_ERRNO(ENOTDIR),      LIZARD_ERRNO(EISDIR),
    LIZARD_ERRNO(EINVAL),       LIZARD_ERRNO(ENFILE),
    LIZARD_ERRNO(EMFILE),       LIZARD_ERRNO(ENOTTY),
    LIZARD_ERRNO(ETXTBSY),      LIZARD_ERRNO(EFBIG),
    LIZARD_ERRNO(ENOSPC),       LIZARD_ERRNO(ESPIPE),
    LIZARD_ERRNO(EROFS),        LIZARD_ERRNO(EMLINK),
    LIZARD_ERRNO(EPIPE),        LIZARD_ERRNO(EDOM),
    LIZARD_ERRNO(ERANGE),       LIZARD_ERRNO(EDEADLK),
    LIZARD_ERRNO(ENAMETOOLONG), LIZARD_ERRNO(ENOLCK),
    LIZARD_ERRNO(ENOSYS),       LIZARD_ERRNO(ENOTEMPTY),
    LIZARD_ERRNO(ELOOP),        LIZARD_ERRNO(ENOMSG),
    LIZARD_ERRNO(EIDRM),        LIZARD_ERRNO(ENOSTR),
    LIZARD_ERRNO(ENODATA),      LIZARD_ERRNO(ETIME),
    LIZARD_ERRNO(ENOSR),        LIZARD_ERRNO(ENOLINK),
    LIZARD_ERRNO(EPROTO),       LIZARD_ERRNO(EBADMSG),
    LIZARD_ERRNO(EOVERFLOW),    LIZARD_ERRNO(EILSEQ),
    LIZARD_ERRNO(ENOTSOCK),     LIZARD_ERRNO(EDESTADDRREQ),
    LIZARD_ERRNO(EMSGSIZE),     LIZARD_ERRNO(EPROTOTYPE),
    LIZARD_ERRNO(ENOPROTOOPT),  LIZARD_ERRNO(EPROTONOSUPPORT),
    LIZARD_ERRNO(EOPNOTSUPP),   LIZARD_ERRNO(EAFNOSUPPORT),
    LIZARD_ERRNO(EADDRINUSE),   LIZARD_ERRNO(EADDRNOTAVAIL),
    LIZARD_ERRNO(ENETDOWN),     LIZARD_ERRNO(ENETUNREACH),
    LIZARD_ERRNO(ENETRESET),    LIZARD_ERRNO(ECONNABORTED),
    LIZARD_ERRNO(ECONNRESET),   LIZARD_ERRNO(ENOBUFS),
    LIZARD_ERRNO(EISCONN),      LIZARD_ERRNO(ENOTCONN),
    LIZARD_ERRNO(ETIMEDOUT),    LIZARD_ERRNO(ECONNREFUSED),
    LIZARD_ERRNO(EHOSTUNREACH), LIZARD_ERRNO(EALREADY),
    LIZARD_ERRNO(EINPROGRESS),  LIZARD_ERRNO(ESTALE),
    LIZARD_ERRNO(EDQUOT),       LIZARD_ERRNO(ECANCELED),
    LIZARD_ERRNO(EOWNERDEAD),   LIZARD_ERRNO(ENOTRECOVERABLE),
};
#undef LIZARD_ERRNO

void write_string(Writer& w, std::string_view text) {
  w.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
}

std::string utf8_message(const char* what) { return workspace::repair_utf8(what ? what : ""); }

void begin_error(Writer& w, int code, const std::string& message, const char* kind) {
  w.StartObject();
  w.Key("code");
  w.Int(code);
  w.Key("message");
  write_string(w, message);
  w.Key("data");
  w.StartObject();
  w.Key("kind");
  w.String(kind);
}

void end_error(Writer& w) {
  w.EndObject();
  w.EndObject();
}

void simple_error(Writer& w, const std::string& message, const char* kind) {
  begin_error(w, kContractError, message, kind);
  end_error(w);
}

std::string text_or_empty(const rapidjson::Value& object, const char* name) {
  const rapidjson::Value* v = member(object, name);
  if (v == nullptr) return {};
  return read_text(*v).value_or("");
}

std::optional<std::string> bytes_member(const rapidjson::Value& object, const char* name) {
  const rapidjson::Value* v = member(object, name);
  if (v == nullptr) return std::nullopt;
  return read_bytes(*v);
}

}  // namespace

void write_text(Writer& w, std::string_view text) {
  if (workspace::is_valid_utf8(text)) {
    write_string(w, text);
    return;
  }
  w.StartObject();
  w.Key("b64");
  write_string(w, base64_encode(text));
  w.EndObject();
}

void write_bytes(Writer& w, std::string_view bytes) {
  // Encoded straight into the message: the alphabet needs no escaping.
  w.UnescapedString(base64_size(bytes.size()), [&](char* out) { base64_encode_to(bytes, out); });
}

std::optional<std::string> read_text(const rapidjson::Value& v) {
  if (v.IsString()) {
    // Messages are parsed without validating their encoding (the long base64
    // strings would take the slow path); text must be UTF-8.
    std::string text(v.GetString(), v.GetStringLength());
    if (!workspace::is_valid_utf8(text)) return std::nullopt;
    return text;
  }
  if (!v.IsObject() || v.MemberCount() != 1) return std::nullopt;
  const rapidjson::Value* b64 = member(v, "b64");
  if (b64 == nullptr) return std::nullopt;
  return read_bytes(*b64);
}

std::optional<std::string> read_bytes(const rapidjson::Value& v) {
  if (!v.IsString()) return std::nullopt;
  return base64_decode(std::string_view(v.GetString(), v.GetStringLength()));
}

void write_ref(Writer& w, const workspace::WorkspaceRef& ref) {
  w.StartObject();
  w.Key("provider");
  write_text(w, ref.provider);
  w.Key("id");
  write_text(w, ref.id);
  w.EndObject();
}

std::optional<workspace::WorkspaceRef> read_ref(const rapidjson::Value& v) {
  if (!v.IsObject()) return std::nullopt;
  const rapidjson::Value* provider = member(v, "provider");
  const rapidjson::Value* id = member(v, "id");
  if (provider == nullptr || id == nullptr) return std::nullopt;
  auto p = read_text(*provider);
  auto i = read_text(*id);
  if (!p || !i) return std::nullopt;
  return workspace::WorkspaceRef{*p, *i};
}

void write_env(Writer& w, const std::map<std::string, std::string>& env) {
  w.StartArray();
  for (const auto& [name, value] : env) {
    w.StartArray();
    write_text(w, name);
    write_text(w, value);
    w.EndArray();
  }
  w.EndArray();
}

std::optional<std::map<std::string, std::string>> read_env(const rapidjson::Value& v) {
  if (!v.IsArray()) return std::nullopt;
  std::map<std::string, std::string> env;
  for (const auto& pair : v.GetArray()) {
    if (!pair.IsArray() || pair.Size() != 2) return std::nullopt;
    auto name = read_text(pair[0]);
    auto value = read_text(pair[1]);
    if (!name || !value) return std::nullopt;
    env[std::move(*name)] = std::move(*value);
  }
  return env;
}

void write_entry(Writer& w, const workspace::FileEntry& entry) {
  w.StartObject();
  w.Key("name");
  write_text(w, entry.name);
  w.Key("path");
  write_text(w, entry.path);
  w.Key("is_dir");
  w.Bool(entry.is_dir);
  if (entry.size) {
    w.Key("size");
    w.Uint64(*entry.size);
  }
  w.EndObject();
}

std::optional<workspace::FileEntry> read_entry(const rapidjson::Value& v) {
  if (!v.IsObject()) return std::nullopt;
  const rapidjson::Value* name = member(v, "name");
  const rapidjson::Value* path = member(v, "path");
  const rapidjson::Value* is_dir = member(v, "is_dir");
  const rapidjson::Value* size = member(v, "size");
  if (name == nullptr || path == nullptr || is_dir == nullptr || !is_dir->IsBool()) {
    return std::nullopt;
  }
  workspace::FileEntry entry;
  auto n = read_text(*name);
  auto p = read_text(*path);
  if (!n || !p) return std::nullopt;
  entry.name = std::move(*n);
  entry.path = std::move(*p);
  entry.is_dir = is_dir->GetBool();
  if (size != nullptr && !size->IsNull()) {
    if (!size->IsUint64()) return std::nullopt;
    entry.size = size->GetUint64();
  }
  return entry;
}

void write_seconds(Writer& w, double seconds) {
  if (std::isnan(seconds)) {
    w.String("NaN");
  } else if (std::isinf(seconds)) {
    w.String(seconds > 0 ? "Infinity" : "-Infinity");
  } else {
    w.Double(seconds);
  }
}

std::optional<double> read_seconds(const rapidjson::Value& v) {
  if (v.IsNumber()) return v.GetDouble();
  if (!v.IsString()) return std::nullopt;
  const std::string_view s(v.GetString(), v.GetStringLength());
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (s == "Infinity") return std::numeric_limits<double>::infinity();
  if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  return std::nullopt;
}

std::string errno_name(std::error_code code) {
  if (code.category() != std::generic_category() && code.category() != std::system_category()) {
    return {};
  }
  for (const auto& e : kErrnoNames) {
    if (e.value == code.value()) return e.name;
  }
  return {};
}

std::optional<std::errc> errc_from_name(std::string_view name) {
  for (const auto& e : kErrnoNames) {
    if (name == e.name) return static_cast<std::errc>(e.value);
  }
  return std::nullopt;
}

const rapidjson::Value* member(const rapidjson::Value& object, const char* name) {
  if (!object.IsObject()) return nullptr;
  auto it = object.FindMember(name);
  return it == object.MemberEnd() ? nullptr : &it->value;
}

void write_current_exception(Writer& w) {
  using namespace workspace;
  try {
    throw;
  } catch (const WorkspaceAuthenticationError& e) {
    simple_error(w, utf8_message(e.what()), "authentication");
  } catch (const WorkspaceUnavailableError& e) {
    simple_error(w, utf8_message(e.what()), "unavailable");
  } catch (const WorkspaceTimeoutError& e) {
    begin_error(w, kContractError, utf8_message(e.what()), "timeout");
    w.Key("out");
    write_bytes(w, e.out());
    w.Key("err");
    write_bytes(w, e.err());
    w.Key("timeout");
    write_seconds(w, e.timeout().count());
    end_error(w);
  } catch (const WorkspaceOutputLimitError& e) {
    begin_error(w, kContractError, utf8_message(e.what()), "output_limit");
    w.Key("limit");
    w.Uint64(e.limit());
    w.Key("out_head");
    write_bytes(w, e.out_head());
    w.Key("err_head");
    write_bytes(w, e.err_head());
    end_error(w);
  } catch (const WorkspaceReadOnlyError& e) {
    simple_error(w, utf8_message(e.what()), "read_only");
  } catch (const WorkspaceCancelledError& e) {
    simple_error(w, utf8_message(e.what()), "cancelled");
  } catch (const WorkspaceNotSupportedError& e) {
    simple_error(w, utf8_message(e.what()), "not_supported");
  } catch (const WorkspaceTransientError& e) {
    begin_error(w, kContractError, utf8_message(e.what()), "transient");
    w.Key("may_have_been_admitted");
    w.Bool(e.may_have_been_admitted());
    if (e.http_status()) {
      w.Key("http_status");
      w.Int(*e.http_status());
    }
    if (e.retry_after()) {
      w.Key("retry_after");
      w.Int64(e.retry_after()->count());
    }
    end_error(w);
  } catch (const WorkspaceError& e) {
    simple_error(w, utf8_message(e.what()), "workspace");
  } catch (const std::filesystem::filesystem_error& e) {
    const std::string name = errno_name(e.code());
    begin_error(w, kContractError, utf8_message(e.what()), "path");
    w.Key("errno");
    w.String(name.empty() ? "EIO" : name.c_str());
    w.Key("path");
    write_text(w, e.path1().string());
    end_error(w);
  } catch (const std::invalid_argument& e) {
    simple_error(w, utf8_message(e.what()), "invalid_argument");
  } catch (const std::exception& e) {
    simple_error(w, utf8_message(e.what()), "error");
  } catch (...) {
    simple_error(w, "an exception of unknown type", "error");
  }
}

std::string throw_error_object(const rapidjson::Value& error) {
  using namespace workspace;
  if (!error.IsObject()) return "the error is not an object";
  const rapidjson::Value* code = member(error, "code");
  const rapidjson::Value* message_value = member(error, "message");
  if (code == nullptr || !code->IsInt() || message_value == nullptr || !message_value->IsString()) {
    return "the error has no integer code and string message";
  }
  const std::string message = workspace::repair_utf8(
      std::string_view(message_value->GetString(), message_value->GetStringLength()));
  const rapidjson::Value* data = member(error, "data");
  const rapidjson::Value* kind_value = data ? member(*data, "kind") : nullptr;
  if (code->GetInt() != kContractError || kind_value == nullptr || !kind_value->IsString()) {
    return "answered a JSON-RPC error " + std::to_string(code->GetInt()) + ": " + message;
  }
  const std::string kind = kind_value->GetString();
  if (kind == "authentication") throw WorkspaceAuthenticationError(message);
  if (kind == "unavailable") throw WorkspaceUnavailableError(message);
  if (kind == "read_only") throw WorkspaceReadOnlyError(message);
  if (kind == "cancelled") throw WorkspaceCancelledError(message);
  if (kind == "not_supported") throw WorkspaceNotSupportedError(message);
  if (kind == "workspace") throw WorkspaceError(message);
  if (kind == "invalid_argument") throw std::invalid_argument(message);
  if (kind == "error") throw std::runtime_error(message);
  if (kind == "timeout") {
    auto out = bytes_member(*data, "out");
    auto err = bytes_member(*data, "err");
    const rapidjson::Value* t = member(*data, "timeout");
    auto seconds = t ? read_seconds(*t) : std::nullopt;
    if (!out || !err || !seconds) return "a timeout error without Bytes out, err and a timeout";
    throw WorkspaceTimeoutError(message, std::move(*out), std::move(*err), Seconds(*seconds));
  }
  if (kind == "output_limit") {
    auto out = bytes_member(*data, "out_head");
    auto err = bytes_member(*data, "err_head");
    const rapidjson::Value* limit = member(*data, "limit");
    if (!out || !err || limit == nullptr || !limit->IsUint64()) {
      return "an output_limit error without a limit and Bytes out_head and err_head";
    }
    throw WorkspaceOutputLimitError(message, limit->GetUint64(), std::move(*out), std::move(*err));
  }
  if (kind == "transient") {
    const rapidjson::Value* admitted = member(*data, "may_have_been_admitted");
    if (admitted == nullptr || !admitted->IsBool()) {
      return "a transient error without may_have_been_admitted";
    }
    std::optional<int> status;
    if (const rapidjson::Value* s = member(*data, "http_status"); s && s->IsInt()) {
      status = s->GetInt();
    }
    std::optional<std::chrono::seconds> retry_after;
    if (const rapidjson::Value* r = member(*data, "retry_after"); r && r->IsNumber()) {
      retry_after = std::chrono::seconds(static_cast<long long>(r->GetDouble()));
    }
    throw WorkspaceTransientError(message, admitted->GetBool(), status, retry_after);
  }
  if (kind == "path") {
    const rapidjson::Value* name = member(*data, "errno");
    if (name == nullptr || !name->IsString()) return "a path error without an errno name";
    auto errc = errc_from_name(name->GetString());
    if (!errc) return std::string("a path error with an unknown errno name ") + name->GetString();
    // The adapter's message may already be a filesystem_error's what().
    std::string what = message;
    const std::string prefix = "filesystem error: ";
    if (what.rfind(prefix, 0) == 0) what = what.substr(prefix.size());
    throw make_path_error(what, text_or_empty(*data, "path"), *errc);
  }
  return "an error of unknown kind '" + kind + "'";
}

void write_utf8_string(Writer& w, std::string_view text) {
  write_string(w, workspace::repair_utf8(text));
}

}  // namespace lizard::conformance::protocol
