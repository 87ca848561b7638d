#include "wire_codec.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <array>
#include <cctype>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>
#include <variant>

#include "bounded_json.h"
#include "lizard/api/errors.h"
#include "lizard/workspace/errors.h"
#include "prefault.h"

namespace lizard::api::internal {

namespace {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

// --- writing ------------------------------------------------------------------

void write_string(JsonWriter& writer, std::string_view text) {
  writer.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
}

void write_string_field(JsonWriter& writer, const char* name, std::string_view text) {
  writer.Key(name);
  write_string(writer, text);
}

void write_optional(JsonWriter& writer, const char* name, const std::optional<std::string>& text) {
  if (text) write_string_field(writer, name, *text);
}

void write_optional(JsonWriter& writer, const char* name,
                    const std::optional<std::int64_t>& number) {
  if (!number) return;
  writer.Key(name);
  writer.Int64(*number);
}

// Flags are sent only when set.
void write_true(JsonWriter& writer, const char* name, bool flag) {
  if (!flag) return;
  writer.Key(name);
  writer.Bool(true);
}

void write_map(JsonWriter& writer, const char* name,
               const std::map<std::string, std::string>& map) {
  if (map.empty()) return;
  writer.Key(name);
  writer.StartObject();
  for (const auto& [key, value] : map) {
    write_string(writer, key);
    write_string(writer, value);
  }
  writer.EndObject();
}

std::string text_of(const rapidjson::StringBuffer& buffer) {
  return std::string(buffer.GetString(), buffer.GetSize());
}

// A JSON object whose members `fields` writes.
template <typename Fields>
std::string json_object(const Fields& fields) {
  rapidjson::StringBuffer buffer;
  JsonWriter writer(buffer);
  writer.StartObject();
  fields(writer);
  writer.EndObject();
  return text_of(buffer);
}

// --- reading ------------------------------------------------------------------

std::string str(const rapidjson::Value& object, const char* name) {
  if (!object.IsObject()) return {};
  const auto it = object.FindMember(name);
  if (it == object.MemberEnd() || !it->value.IsString()) return {};
  return std::string(it->value.GetString(), it->value.GetStringLength());
}

double num(const rapidjson::Value& object, const char* name, double fallback = 0) {
  if (!object.IsObject()) return fallback;
  const auto it = object.FindMember(name);
  if (it == object.MemberEnd() || !it->value.IsNumber()) return fallback;
  return it->value.GetDouble();
}

bool flag(const rapidjson::Value& object, const char* name) {
  if (!object.IsObject()) return false;
  const auto it = object.FindMember(name);
  return it != object.MemberEnd() && it->value.IsBool() && it->value.GetBool();
}

// A JSON number as an integer type without undefined behaviour: absent or not
// a number gives `fallback`; nullopt when T cannot hold it (a negative size,
// 1e300; NaN never parses). In-range fractions are truncated.
template <typename T>
std::optional<T> integer_member(const rapidjson::Value& object, const char* name, T fallback) {
  if (!object.IsObject()) return fallback;
  const auto it = object.FindMember(name);
  if (it == object.MemberEnd() || !it->value.IsNumber()) return fallback;
  const rapidjson::Value& value = it->value;
  if (value.IsInt64()) {
    const std::int64_t n = value.GetInt64();
    if (std::in_range<T>(n)) return static_cast<T>(n);
    return std::nullopt;
  }
  if (value.IsUint64()) {
    const std::uint64_t n = value.GetUint64();
    if (std::in_range<T>(n)) return static_cast<T>(n);
    return std::nullopt;
  }
  const double d = value.GetDouble();
  // [-2^digits, 2^digits) for signed T, [0, 2^digits) for unsigned: both
  // bounds are exact doubles, and every double inside truncates into T.
  const double limit = std::ldexp(1.0, std::numeric_limits<T>::digits);
  const double lowest = std::numeric_limits<T>::is_signed ? -limit : 0.0;
  if (std::isfinite(d) && d >= lowest && d < limit) return static_cast<T>(d);
  return std::nullopt;
}

// integer_member, or a WorkspaceError naming the field for a number out of range.
template <typename T>
T integer(const rapidjson::Value& object, const char* name, std::string_view what, T fallback = 0) {
  if (const auto value = integer_member<T>(object, name, fallback)) return *value;
  throw workspace::WorkspaceError(std::string(what) + ": the API answered with a malformed \"" +
                                  name + "\" (out of range)");
}

rapidjson::Document parse(std::string_view body, std::string_view what) {
  rapidjson::Document doc;
  if (!parse_bounded(doc, body)) {
    throw workspace::WorkspaceError(
        std::string(what) + ": the API answered with malformed JSON (or JSON nested deeper than " +
        std::to_string(kMaxJsonDepth) + " levels)");
  }
  return doc;
}

// More entries than any listing of the API holds (a directory of a million
// files): each decoded entry costs about a hundred times the bytes of a bare
// `0` or `{}`, so a hostile answer of tens of MiB would cost gigabytes.
constexpr std::size_t kMaxArrayAnswerEntries = 1'000'000;

// Every element of a JSON array answer (an element that is not an object
// decodes as an empty one). Anything but an array is a WorkspaceError: an
// object such as {"items": [...]} or an error body answered with 200 is not
// an empty listing. An array over kMaxArrayAnswerEntries is refused before
// anything is decoded.
template <typename Decode>
auto decode_array(std::string_view body, std::string_view what, Decode decode) {
  const auto doc = parse(body, what);
  std::vector<decltype(decode(doc))> out;
  if (!doc.IsArray()) {
    throw workspace::WorkspaceError(std::string(what) +
                                    ": the API answered with something other than a list");
  }
  const auto items = doc.GetArray();
  if (items.Size() > kMaxArrayAnswerEntries) {
    throw workspace::WorkspaceError(std::string(what) + ": the API answered with " +
                                    std::to_string(items.Size()) + " entries (at most " +
                                    std::to_string(kMaxArrayAnswerEntries) + " are read)");
  }
  out.reserve(items.Size());
  for (const auto& item : items) out.push_back(decode(item));
  return out;
}

SandboxInfo sandbox_of(const rapidjson::Value& value) {
  SandboxInfo info;
  info.sandbox_id = str(value, "sandboxId");
  if (info.sandbox_id.empty()) info.sandbox_id = str(value, "id");
  info.template_name = str(value, "template");
  info.status = str(value, "status");
  info.region = str(value, "region");
  info.size = str(value, "size");
  info.project_id = str(value, "projectId");
  info.started_at = str(value, "startedAt");
  info.end_at = str(value, "endAt");
  if (!value.IsObject()) return info;
  const auto it = value.FindMember("metadata");
  if (it == value.MemberEnd() || !it->value.IsObject()) return info;
  for (const auto& member : it->value.GetObject()) {
    if (member.value.IsString()) {
      info.metadata[std::string(member.name.GetString(), member.name.GetStringLength())] =
          std::string(member.value.GetString(), member.value.GetStringLength());
    }
  }
  return info;
}

FileInfo file_of(const rapidjson::Value& value, std::string_view what) {
  FileInfo info;
  info.name = str(value, "name");
  info.path = str(value, "path");
  info.type = str(value, "type");
  info.size = integer<std::uint64_t>(value, "size", what);
  info.mode = integer<std::uint32_t>(value, "mode", what);
  info.permissions = str(value, "permissions");
  info.mod_time_ms = integer<std::int64_t>(value, "modTime", what);
  if (value.IsObject()) {
    const auto it = value.FindMember("symlinkTarget");
    if (it != value.MemberEnd() && it->value.IsString()) {
      info.symlink_target = std::string(it->value.GetString(), it->value.GetStringLength());
    }
  }
  return info;
}

VolumeInfo volume_of(const rapidjson::Value& value) {
  VolumeInfo info;
  info.id = str(value, "id");
  info.project_id = str(value, "projectId");
  info.name = str(value, "name");
  info.size_gb = num(value, "sizeGb");
  info.region = str(value, "region");
  info.status = str(value, "status");
  info.attached_to = str(value, "attachedTo");
  return info;
}

ProcessInfo process_of(const rapidjson::Value& value, std::string_view what) {
  ProcessInfo process;
  process.pid = integer<long long>(value, "pid", what);
  process.started_at = str(value, "startedAt");
  if (!value.IsObject()) return process;
  const auto it = value.FindMember("cmd");
  if (it == value.MemberEnd() || !it->value.IsArray()) return process;
  for (const auto& item : it->value.GetArray()) {
    if (item.IsString()) process.cmd.emplace_back(item.GetString(), item.GetStringLength());
  }
  return process;
}

}  // namespace

// --- paths --------------------------------------------------------------------

std::string escape_segment(std::string_view segment) {
  static constexpr const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (const char c : segment) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    }
  }
  return out;
}

namespace {

// An ID as one segment of a URL path. "", "." and ".." would name another
// route (curl folds "/api/sandboxes/.." into "/api/", and "/api/sandboxes/"
// is the list): refused before any request, whoever passed them (a caller,
// or a listing a hostile server answered).
std::string id_segment(std::string_view id, const char* what) {
  if (id.empty() || id == "." || id == "..") {
    throw std::invalid_argument(std::string(what) + " \"" + std::string(id) +
                                "\" cannot name a route of the API");
  }
  return escape_segment(id);
}

}  // namespace

std::string sandbox_path(std::string_view sandbox_id, std::string_view rest) {
  return "/api/sandboxes/" + id_segment(sandbox_id, "the sandbox ID") + std::string(rest);
}

std::string project_path(std::string_view project_id, std::string_view rest) {
  return "/api/projects/" + id_segment(project_id, "the project ID") + std::string(rest);
}

// --- request bodies -----------------------------------------------------------

std::string encode_create_sandbox(const CreateSandboxRequest& request) {
  return json_object([&](JsonWriter& writer) {
    write_string_field(writer, "template", request.template_name);
    write_string_field(writer, "projectId", request.project_id);
    write_optional(writer, "timeoutMs", request.timeout_ms);
    write_optional(writer, "size", request.size);
    write_optional(writer, "region", request.region);
    write_map(writer, "envs", request.envs);
    write_map(writer, "metadata", request.metadata);
    write_optional(writer, "volumeId", request.volume_id);
    write_optional(writer, "volumeName", request.volume_name);
  });
}

std::string encode_exec(const ExecRequest& request) {
  return json_object([&](JsonWriter& writer) {
    writer.Key("cmd");
    if (const auto* text = std::get_if<std::string>(&request.cmd)) {
      write_string(writer, *text);
    } else {
      writer.StartArray();
      for (const auto& item : std::get<std::vector<std::string>>(request.cmd)) {
        write_string(writer, item);
      }
      writer.EndArray();
    }
    write_map(writer, "envs", request.envs);
    write_optional(writer, "workdir", request.workdir);
    write_optional(writer, "user", request.user);
    write_optional(writer, "timeoutMs", request.timeout_ms);
    write_true(writer, "pidEvent", request.pid_event);
  });
}

std::string encode_timeout(std::int64_t timeout_ms) {
  return json_object(
      [&](JsonWriter& writer) { write_optional(writer, "timeoutMs", std::optional(timeout_ms)); });
}

std::string encode_signal(long long pid, std::string_view signal) {
  return json_object([&](JsonWriter& writer) {
    write_optional(writer, "pid", std::optional<std::int64_t>(pid));
    write_string_field(writer, "signal", signal);
  });
}

std::string encode_create_volume(const CreateVolumeRequest& request) {
  return json_object([&](JsonWriter& writer) {
    write_string_field(writer, "name", request.name);
    if (request.size_gb) {
      writer.Key("sizeGb");
      writer.Double(*request.size_gb);
    }
    write_optional(writer, "region", request.region);
    write_true(writer, "getOrCreate", request.get_or_create);
  });
}

std::string encode_strings(std::initializer_list<std::pair<const char*, std::string_view>> fields) {
  return json_object([&](JsonWriter& writer) {
    for (const auto& [name, value] : fields) write_string_field(writer, name, value);
  });
}

namespace {

// What a JSON string escapes: 0 for a byte that goes as it is, else the
// character after the backslash ('u' for \u00XX).
constexpr std::array<char, 256> make_escapes() {
  std::array<char, 256> table{};
  for (std::size_t c = 0; c < 0x20; ++c) table[c] = 'u';
  table['\b'] = 'b';
  table['\f'] = 'f';
  table['\n'] = 'n';
  table['\r'] = 'r';
  table['\t'] = 't';
  table['"'] = '"';
  table['\\'] = '\\';
  return table;
}
constexpr auto kEscapes = make_escapes();

// The size of `text` as a JSON string, quotes excluded.
std::size_t escaped_size(std::string_view text) {
  std::size_t size = text.size();
  for (const char c : text) {
    const char e = kEscapes[static_cast<unsigned char>(c)];
    size += e == 0 ? 0 : e == 'u' ? 5 : 1;
  }
  return size;
}

// Appends `text` as a JSON string, quotes excluded: the runs between escaped
// bytes are copied whole.
void append_escaped(std::string_view text, std::string& out) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  const char* run = text.data();
  const char* const end = run + text.size();
  for (const char* p = run; p != end; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    const char e = kEscapes[c];
    if (e == 0) continue;
    out.append(run, static_cast<std::size_t>(p - run));
    if (e == 'u') {
      const char escaped[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
      out.append(escaped, sizeof escaped);
    } else {
      const char escaped[2] = {'\\', e};
      out.append(escaped, sizeof escaped);
    }
    run = p + 1;
  }
  out.append(run, static_cast<std::size_t>(end - run));
}

// {"path":PATH,"content":"<content_size bytes from write_content>` + tail,
// in one string sized up front and made present at once (tens of MiB: no
// growth, no copy, no page fault per page).
template <typename WriteContent>
std::string upload_body(std::string_view path, std::size_t content_size, std::string_view tail,
                        const WriteContent& write_content) {
  rapidjson::StringBuffer path_json;
  JsonWriter writer(path_json);
  write_string(writer, path);
  constexpr std::string_view kHead = "{\"path\":";
  constexpr std::string_view kMiddle = ",\"content\":\"";
  std::string body;
  body.reserve(kHead.size() + path_json.GetSize() + kMiddle.size() + content_size + tail.size());
  prefault(body.data(), body.capacity());  // all of it is written next
  body.append(kHead);
  body.append(path_json.GetString(), path_json.GetSize());
  body.append(kMiddle);
  write_content(body);
  body.append(tail);
  return body;
}

}  // namespace

std::string encode_base64_upload(std::string_view path, std::string_view data,
                                 bool declare_base64) {
  return upload_body(path, base64_encoded_size(data.size()),
                     declare_base64 ? "\",\"encoding\":\"base64\"}" : "\"}",
                     [&](std::string& body) { base64_encode_append(data, body); });
}

std::string encode_text_upload(std::string_view path, std::string_view text) {
  return upload_body(path, escaped_size(text), "\"}",
                     [&](std::string& body) { append_escaped(text, body); });
}

// --- answers ------------------------------------------------------------------

std::vector<ProjectInfo> decode_projects(std::string_view body, std::string_view what) {
  return decode_array(body, what, [](const rapidjson::Value& value) {
    return ProjectInfo{str(value, "id"), str(value, "name"), str(value, "slug"),
                       str(value, "workspaceId")};
  });
}

SandboxInfo decode_sandbox(std::string_view body, std::string_view what) {
  return sandbox_of(parse(body, what));
}

std::vector<SandboxInfo> decode_sandboxes(std::string_view body, std::string_view what) {
  return decode_array(body, what, [](const rapidjson::Value& value) { return sandbox_of(value); });
}

ExecResult decode_exec_result(std::string_view body, std::string_view what) {
  const auto doc = parse(body, what);
  ExecResult result;
  result.out = str(doc, "stdout");
  result.err = str(doc, "stderr");
  result.exit_code = integer<int>(doc, "exitCode", what, -1);
  result.truncated = flag(doc, "truncated");
  result.timed_out = flag(doc, "timedOut");
  if (!doc.IsObject() || !doc.HasMember("exitCode")) {
    throw workspace::WorkspaceError(std::string(what) + ": the answer has no exitCode");
  }
  return result;
}

std::vector<ProcessInfo> decode_processes(std::string_view body, std::string_view what) {
  return decode_array(body, what,
                      [&](const rapidjson::Value& value) { return process_of(value, what); });
}

FileInfo decode_file(std::string_view body, std::string_view what) {
  return file_of(parse(body, what), what);
}

std::vector<FileInfo> decode_files(std::string_view body, std::string_view what) {
  return decode_array(body, what,
                      [&](const rapidjson::Value& value) { return file_of(value, what); });
}

VolumeInfo decode_volume(std::string_view body, std::string_view what) {
  return volume_of(parse(body, what));
}

std::vector<VolumeInfo> decode_volumes(std::string_view body, std::string_view what) {
  return decode_array(body, what, [](const rapidjson::Value& value) { return volume_of(value); });
}

// --- the exec stream ----------------------------------------------------------

ExecStreamDecoder::ExecStreamDecoder(std::function<void(const ExecEvent&)> on_event)
    : on_event_(std::move(on_event)),
      parser_([this](const std::string& event, const std::string& data) { on_sse(event, data); }) {}

void ExecStreamDecoder::feed(std::string_view chunk) noexcept {
  if (callback_error_) return;
  try {
    parser_.feed(chunk);
  } catch (...) {
    callback_error_ = std::current_exception();
  }
}

void ExecStreamDecoder::on_sse(const std::string& event, const std::string& data) {
  if (event == "error") {
    error_ = data;
    on_event_(ExecEvent{ExecEvent::Kind::kError, data, 0});
    return;
  }
  rapidjson::Document doc;
  if (!parse_bounded(doc, data) || !doc.IsObject()) return;
  if (event == "exit" || doc.HasMember("exitCode")) {
    const auto code = integer_member<int>(doc, "exitCode", -1);
    if (!code) {
      malformed_ = "exitCode";
      return;
    }
    exit_code_ = *code;
    on_event_(ExecEvent{ExecEvent::Kind::kExit, {}, *code});
  } else if (doc.HasMember("line")) {
    const bool is_err = str(doc, "stream") == "stderr";
    on_event_(ExecEvent{is_err ? ExecEvent::Kind::kStderr : ExecEvent::Kind::kStdout,
                        str(doc, "line"), 0});
  } else if (doc.HasMember("pid")) {
    const auto pid = integer_member<long long>(doc, "pid", 0);
    if (!pid) {
      malformed_ = "pid";
      return;
    }
    on_event_(ExecEvent{ExecEvent::Kind::kPid, {}, *pid});
  }
}

int ExecStreamDecoder::finish(std::string_view what, std::string_view secret) {
  feed("\n");
  parser_.finish();
  if (callback_error_) std::rethrow_exception(callback_error_);
  const std::string op(what);
  if (malformed_) {
    throw workspace::WorkspaceError(op + ": the stream carried a malformed \"" + *malformed_ +
                                    "\" (out of range)");
  }
  if (parser_.overflowed()) {
    throw workspace::WorkspaceError(op + ": the stream carried a line or event over " +
                                    std::to_string(SseParser::kMaxEventBytes) +
                                    " bytes (not kept)");
  }
  if (error_) {
    throw workspace::WorkspaceError(
        op + ": the stream reported an error: " + redacted_brief(*error_, secret));
  }
  if (!exit_code_) {
    throw workspace::WorkspaceError(op + ": the stream ended without an exit event");
  }
  return *exit_code_;
}

}  // namespace lizard::api::internal
