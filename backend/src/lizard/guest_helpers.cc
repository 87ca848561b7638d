#include "lizard/guest_helpers.h"

#include <algorithm>
#include <cerrno>
#include <stdexcept>

#include "lizard/api/codec.h"
#include "lizard/guest_scripts.h"
#include "lizard/workspace/types.h"
#include "lizard/workspace/utf8.h"

namespace lizard::workspace::internal {

namespace {

// The most digits of an envelope number parsed: 10^18 - 1 fits a long long.
constexpr std::size_t kMaxEnvelopeDigits = 18;

// argv for `sh -c SCRIPT NAME args...`.
std::vector<std::string> helper(std::string script, std::string_view name) {
  return {"/bin/sh", "-c", std::move(script), std::string(name)};
}

std::string with_path_errno(std::string_view script) {
  std::string text(kPathErrnoScript);
  text.append(script);
  return text;
}

// The fields of a run (run.sh's header comment), in order.
std::vector<std::string> run_fields(const RunSpec& spec) {
  std::string cleanup;
  for (const auto& id : spec.cleanup) {
    if (!cleanup.empty()) cleanup += ' ';
    cleanup += id;
  }
  std::vector<std::string> fields = {spec.run_id,
                                     std::to_string(spec.timeout_ms),
                                     std::to_string(spec.limit_bytes),
                                     cleanup,
                                     std::to_string(spec.inline_budget),
                                     spec.state_dir,
                                     encode_item(spec.workdir),
                                     std::to_string(spec.env.size())};
  for (const auto& [name, value] : spec.env) {
    std::string entry = name;
    entry += '=';
    entry += value;
    fields.push_back(encode_item(entry));
  }
  for (const auto& item : spec.argv) fields.push_back(encode_item(item));
  return fields;
}

}  // namespace

std::string encode_item(std::string_view item) {
  // Appended rather than `"r" + std::string(item)`: gcc 12 at -O3 reports a
  // false -Wrestrict overlap in the operator+ overloads.
  const bool raw = is_valid_utf8(item);
  std::string encoded(1, raw ? 'r' : 'b');
  encoded.append(raw ? std::string(item) : api::base64_encode(item));
  return encoded;
}

std::vector<std::string> run_command(const RunSpec& spec) {
  std::vector<std::string> argv = {"/bin/sh", "-c", std::string(kRunStartScript),
                                   std::string(kRunScript)};
  for (auto& field : run_fields(spec)) argv.push_back(std::move(field));
  return argv;
}

std::string argument_list_problem(const RunSpec& spec) {
  const auto too_long = [](std::string_view what, std::size_t size) {
    return "Argument list too long (E2BIG): " + std::string(what) + " of " + std::to_string(size) +
           " bytes is over the " + std::to_string(kMaxArgumentString + 1) +
           " bytes execve(2) takes for one string";
  };
  for (const auto& item : spec.argv) {
    if (item.size() > kMaxArgumentString) return too_long("an argument", item.size());
  }
  for (const auto& [name, value] : spec.env) {
    if (name.size() + 1 + value.size() > kMaxArgumentString)
      return too_long("the environment entry " + name.substr(0, 40),
                      name.size() + 1 + value.size());
  }
  // The helper carries every field as an environment string "__lz_N=FIELD"
  // (run_start.sh): each must fit one string, and all of them the total.
  std::size_t total = kRunStartScript.size() + kRunScript.size() + 64;
  std::size_t n = 0;
  for (const auto& field : run_fields(spec)) {
    const std::size_t size = field.size() + 8 + std::to_string(n++).size();
    if (size > kMaxArgumentString) return too_long("an encoded argument", field.size());
    total += 2 * (size + 1 + sizeof(char*));  // as argv of the start, then as its environment
  }
  if (total > kMaxArgumentTotal) {
    return "Argument list too long (E2BIG): the command's arguments and environment take " +
           std::to_string(total / 2) + " bytes, over what execve(2) takes (about " +
           std::to_string(kMaxArgumentTotal / 2) + " bytes here)";
  }
  return {};
}

std::string run_file(std::string_view state_dir, std::string_view run_id, std::string_view suffix) {
  std::string path(state_dir);
  path += '/';
  path += run_id;
  path += '.';
  path += suffix;
  return path;
}

std::optional<Envelope> parse_envelope(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) {
      lines.push_back(text.substr(at));
      break;
    }
    lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  // The wrapper's own lines; anything before them would be noise.
  std::size_t first = 0;
  while (first < lines.size() && lines[first].substr(0, 4) != "LZ2 " &&
         lines[first].substr(0, 7) != "LZFAIL ") {
    ++first;
  }
  if (first == lines.size()) return std::nullopt;
  if (lines[first].substr(0, 7) == "LZFAIL ") {
    throw std::runtime_error("the run helper failed: " + std::string(lines[first].substr(7)));
  }
  if (lines.size() < first + 4 || lines[first + 3] != "LZEND") return std::nullopt;
  Envelope env;
  long long values[6] = {0, 0, 0, 0, 0, 0};
  {
    std::string_view rest = lines[first].substr(4);
    for (long long& value : values) {
      while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
      std::size_t n = 0;
      bool negative = false;
      if (!rest.empty() && rest.front() == '-') {
        negative = true;
        rest.remove_prefix(1);
      }
      long long v = 0;
      while (n < rest.size() && rest[n] >= '0' && rest[n] <= '9') {
        // 18 digits always fit a long long; the wrapper never prints more
        // (sizes are capped far lower), so more is a malformed envelope.
        if (n == kMaxEnvelopeDigits) return std::nullopt;
        v = v * 10 + (rest[n++] - '0');
      }
      if (n == 0) return std::nullopt;
      value = negative ? -v : v;
      rest.remove_prefix(n);
    }
  }
  env.exit_code = static_cast<int>(values[0]);
  env.timed_out = values[1] != 0;
  env.over_limit = values[2] != 0;
  if (values[3] < 0 || values[4] < 0) return std::nullopt;
  env.out_size = static_cast<std::uint64_t>(values[3]);
  env.err_size = static_cast<std::uint64_t>(values[4]);
  env.start_errno = static_cast<int>(values[5] > 4095 || values[5] < 0 ? 0 : values[5]);
  const auto decode = [](std::string_view line) -> std::optional<std::string> {
    if (line.empty() || line.front() != 'b') return std::nullopt;
    try {
      return api::base64_decode(line.substr(1));
    } catch (const std::invalid_argument&) {
      // A complete envelope (LZEND seen) with a stream that is not base64 is
      // not a cut answer that a re-attach could complete: report it.
      throw std::runtime_error("the run helper's answer is malformed (a stream is not base64)");
    }
  };
  env.out = decode(lines[first + 1]);
  env.err = decode(lines[first + 2]);
  // A stream sent inline is its first OUTSIZE bytes (over the limit: its
  // first 64 KiB, or all of a shorter one). Fewer means its file was cut or
  // removed before the answer read it: never a result with output missing.
  const auto check = [&](const std::optional<std::string>& bytes, std::uint64_t size) {
    if (!bytes) return;
    const std::uint64_t want =
        env.over_limit ? std::min<std::uint64_t>(size, kOutputHeadBytes) : size;
    if (bytes->size() < want || (!env.over_limit && bytes->size() != size)) {
      throw std::runtime_error(
          "the command's output was removed or cut in the sandbox before it "
          "could be read (" +
          std::to_string(bytes->size()) + " of " + std::to_string(want) + " bytes)");
    }
  };
  check(env.out, env.out_size);
  check(env.err, env.err_size);
  return env;
}

std::vector<std::string> kill_command(std::string_view state_dir, std::string_view run_id) {
  auto argv = helper(std::string(kKillScript), "lizard-kill");
  argv.push_back(std::string(state_dir) + "/" + std::string(run_id));
  return argv;
}

std::vector<std::string> probe_command(const std::vector<std::string>& paths) {
  auto argv = helper(with_path_errno(kProbeScript), "lizard-probe");
  argv.insert(argv.end(), paths.begin(), paths.end());
  return argv;
}

std::vector<std::string> mkdir_command(std::string_view path) {
  auto argv = helper(with_path_errno(kMkdirScript), "lizard-mkdir");
  argv.emplace_back(path);
  return argv;
}

std::vector<std::string> realpath_command(std::string_view path) {
  auto argv = helper(with_path_errno(kRealpathScript), "lizard-realpath");
  argv.emplace_back(path);
  return argv;
}

std::vector<std::string> write_command(std::string_view staged, std::string_view target) {
  auto argv = helper(with_path_errno(kWriteScript), "lizard-write");
  argv.emplace_back(staged);
  argv.emplace_back(target);
  return argv;
}

std::optional<int> parse_write_answer(std::string_view text) {
  const auto at = text.find("LZW ");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(at + 4);
  int value = 0;
  std::size_t n = 0;
  while (n < rest.size() && n < 4 && rest[n] >= '0' && rest[n] <= '9') {
    value = value * 10 + (rest[n++] - '0');
  }
  if (n == 0) return std::nullopt;
  return value;
}

std::optional<int> errno_of_helper_exit(int exit_code) {
  switch (exit_code) {
    case 17:
      return EEXIST;
    case 20:
      return ENOTDIR;
    case 13:
      return EACCES;
    case 40:
      return ELOOP;
    case 2:
      return ENOENT;
    case 30:
      return EROFS;
    case 21:
      return EISDIR;
    case 7:
      return E2BIG;
    case 5:
      return EIO;
    case 28:
      return ENOSPC;
    case 31:
      return EMLINK;
    case 36:
      return ENAMETOOLONG;
    case 122:
      return EDQUOT;
    default:
      return std::nullopt;
  }
}

}  // namespace lizard::workspace::internal
