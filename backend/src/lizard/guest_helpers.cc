#include "lizard/guest_helpers.h"

#include <cerrno>
#include <stdexcept>

#include "lizard/api/codec.h"
#include "lizard/workspace/utf8.h"

namespace lizard::workspace::internal {

namespace {

// The wrapper runs in the exec's process group, which the server kills when
// its per-request limit passes. It only starts the supervisor (in a session
// of its own, so it survives that kill) and prints the envelope when the
// supervisor has written the status. Re-sent unchanged, it finds the run
// directory and just waits again: the command never starts twice.
// Variables carry a __lz_ prefix because a name the caller passed in env is
// exported, and assigning it would change the command's environment.
constexpr std::string_view kWrapper = R"SH(__lz_d=/tmp/.lizard/$2
for __lz_c in $5; do rm -rf "/tmp/.lizard/$__lz_c"; done
mkdir -p /tmp/.lizard
if mkdir "$__lz_d" 2>/dev/null; then
  setsid -w /bin/sh -c "$1" lizard-supervisor "$@" </dev/null >/dev/null 2>"$__lz_d/supervisor.err" &
  wait $!
  if [ ! -e "$__lz_d/status" ]; then
    echo "LZFAIL the supervisor did not start: $(head -c 300 "$__lz_d/supervisor.err" 2>/dev/null)"
    exit 0
  fi
fi
while [ ! -e "$__lz_d/status" ]; do
  if [ ! -d "$__lz_d" ]; then echo "LZFAIL the run directory is gone"; exit 0; fi
  sleep 0.05
done
read __lz_x __lz_t __lz_o __lz_os __lz_es <"$__lz_d/status"
echo "LZ1 $__lz_x $__lz_t $__lz_o $__lz_os $__lz_es"
__lz_emit() {
  if [ "$3" = 1 ]; then printf b; head -c "$2" "$1" | base64 -w0; echo; else echo -; fi
}
if [ "$__lz_o" = 1 ]; then
  __lz_emit "$__lz_d/out" 65536 1
  __lz_emit "$__lz_d/err" 65536 1
else
  __lz_oi=0
  __lz_ei=0
  if [ $((__lz_os + __lz_es)) -le "$6" ]; then
    __lz_oi=1
    __lz_ei=1
  else
    [ "$__lz_os" -le $(($6 / 2)) ] && __lz_oi=1
    [ "$__lz_es" -le $(($6 / 2)) ] && __lz_ei=1
  fi
  __lz_emit "$__lz_d/out" "$__lz_os" "$__lz_oi"
  __lz_emit "$__lz_d/err" "$__lz_es" "$__lz_ei"
fi
echo LZEND
)SH";

// The supervisor owns the run: it decodes the argv, starts the command in a
// session of its own (so its process group can be killed without killing
// the supervisor), copies at most LIMIT+1 bytes of each stream into files
// (FIFOs + head, so output over the limit is detected without filling the
// disk), enforces the timeout, and records the outcome in "status".
constexpr std::string_view kSupervisor = R"SH(__lz_d=/tmp/.lizard/$2
__lz_t=$3
__lz_l=$4
shift 6
__lz_n=$#
while [ "$__lz_n" -gt 0 ]; do
  __lz_a=$1
  shift
  case $__lz_a in
    r*) __lz_a=${__lz_a#r} ;;
    *) __lz_a=$(printf '%s' "${__lz_a#b}" | base64 -d; printf x); __lz_a=${__lz_a%x} ;;
  esac
  set -- "$@" "$__lz_a"
  __lz_n=$((__lz_n - 1))
done
mkfifo "$__lz_d/o.p" "$__lz_d/e.p" || exit 1
# A shell cannot un-ignore a signal ignored on entry, and a server may start
# us with SIGPIPE ignored; the command must start with it at its default (a
# writer to a closed stream dies quietly, as on a terminal). env does it when
# it can (coreutils >= 8.31), unless argv[0] holds "=" (env would take it as
# an assignment).
case $1 in
  *=*) ;;
  *) env --default-signal=PIPE true 2>/dev/null && set -- env --default-signal=PIPE -- "$@" ;;
esac
setsid -- "$@" </dev/null >"$__lz_d/o.p" 2>"$__lz_d/e.p" &
__lz_p=$!
echo "$__lz_p" >"$__lz_d/pid"
# head buffers its output until it exits; unbuffered, the bytes a background
# child's still-open stream has carried are in the file when the run ends.
__lz_h="stdbuf -o0 head"
command -v stdbuf >/dev/null 2>&1 || __lz_h=head
__lz_reader() {
  $__lz_h -c $((__lz_l + 1)) <"$1" >"$2"
  if [ "$(wc -c <"$2")" -gt "$__lz_l" ]; then
    : >"$__lz_d/over"
    kill -KILL -"$__lz_p" 2>/dev/null
  fi
  : >"$3"
}
__lz_reader "$__lz_d/o.p" "$__lz_d/out" "$__lz_d/o.done" &
__lz_reader "$__lz_d/e.p" "$__lz_d/err" "$__lz_d/e.done" &
__lz_w=
if [ "$__lz_t" -gt 0 ]; then
  (
    # Stopped early (the command ended), it takes its sleep along.
    trap 'kill "$__lz_s" 2>/dev/null; exit 0' TERM
    sleep "$((__lz_t / 1000)).$(printf %03d $((__lz_t % 1000)))" &
    __lz_s=$!
    wait "$__lz_s" || exit 0
    : >"$__lz_d/timedout"
    kill -TERM -"$__lz_p" 2>/dev/null
    sleep 2
    kill -KILL -"$__lz_p" 2>/dev/null
  ) </dev/null >/dev/null 2>&1 &
  __lz_w=$!
fi
wait "$__lz_p"
__lz_x=$?
[ -n "$__lz_w" ] && kill "$__lz_w" 2>/dev/null
__lz_to=0
if [ -e "$__lz_d/timedout" ]; then
  __lz_to=1
  kill -KILL -"$__lz_p" 2>/dev/null
fi
# The drain grace: readers normally finish within milliseconds of the exit;
# only a background child still holding a stream makes this wait run out.
# One second, so that a loaded machine does not cut a normal command's output.
__lz_i=0
while [ ! -e "$__lz_d/o.done" ] || [ ! -e "$__lz_d/e.done" ]; do
  [ "$__lz_i" -ge 50 ] && break
  sleep 0.02
  __lz_i=$((__lz_i + 1))
done
__lz_os=$(($(wc -c <"$__lz_d/out" 2>/dev/null || echo 0)))
__lz_es=$(($(wc -c <"$__lz_d/err" 2>/dev/null || echo 0)))
__lz_ov=0
if [ -e "$__lz_d/over" ] || [ "$__lz_os" -gt "$__lz_l" ] || [ "$__lz_es" -gt "$__lz_l" ]; then
  __lz_ov=1
  kill -KILL -"$__lz_p" 2>/dev/null
fi
echo "$__lz_x $__lz_to $__lz_ov $__lz_os $__lz_es" >"$__lz_d/status.t"
mv "$__lz_d/status.t" "$__lz_d/status"
)SH";

constexpr std::string_view kKill = R"SH(d=/tmp/.lizard/$1
[ -d "$d" ] || exit 0
i=0
while [ ! -s "$d/pid" ] && [ "$i" -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
p=$(cat "$d/pid" 2>/dev/null)
[ -n "$p" ] && kill -KILL -"$p" 2>/dev/null
exit 0
)SH";

constexpr std::string_view kProbe = R"SH(for p do
  if [ -d "$p" ]; then echo d
  elif [ -e "$p" ]; then echo "f $(stat -L -c %s -- "$p")"
  else
    case $(stat -L -- "$p" 2>&1) in *"symbolic links"*) echo l ;; *) echo n ;; esac
  fi
done
)SH";

constexpr std::string_view kMkdir = R"SH(m=$(mkdir -p -- "$1" 2>&1) && exit 0
case $m in
  *"File exists"*) exit 17 ;;
  *"Not a directory"*) exit 20 ;;
  *"Permission denied"*) exit 13 ;;
  *"symbolic links"*) exit 40 ;;
  *"No such file"*) exit 2 ;;
  *"Read-only"*) exit 30 ;;
esac
printf '%s\n' "$m"
exit 1
)SH";

constexpr std::string_view kRealpath =
    R"SH(m=$(realpath -m -- "$1" 2>&1; printf x) && { printf '%s' "${m%x}"; exit 0; }
case $m in *"symbolic links"*) exit 40 ;; esac
printf '%s' "${m%x}" >&2
exit 1
)SH";

std::vector<std::string> helper(std::string_view script, std::string_view name) {
  return {"/bin/sh", "-c", std::string(script), std::string(name)};
}

}  // namespace

std::string encode_item(std::string_view item) {
  if (is_valid_utf8(item)) return "r" + std::string(item);
  return "b" + api::base64_encode(item);
}

std::vector<std::string> run_command(const RunSpec& spec) {
  std::string cleanup;
  for (const auto& id : spec.cleanup) {
    if (!cleanup.empty()) cleanup += ' ';
    cleanup += id;
  }
  std::vector<std::string> argv = helper(kWrapper, "lizard-run");
  argv.emplace_back(kSupervisor);
  argv.push_back(spec.run_id);
  argv.push_back(std::to_string(spec.timeout_ms));
  argv.push_back(std::to_string(spec.limit_bytes));
  argv.push_back(cleanup);
  argv.push_back(std::to_string(spec.inline_budget));
  for (const auto& item : spec.argv) argv.push_back(encode_item(item));
  return argv;
}

std::string run_dir(std::string_view run_id) {
  return std::string(kRunRoot) + "/" + std::string(run_id);
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
  while (first < lines.size() && lines[first].substr(0, 4) != "LZ1 " &&
         lines[first].substr(0, 7) != "LZFAIL ") {
    ++first;
  }
  if (first == lines.size()) return std::nullopt;
  if (lines[first].substr(0, 7) == "LZFAIL ") {
    throw std::runtime_error("the run helper failed: " + std::string(lines[first].substr(7)));
  }
  if (lines.size() < first + 4 || lines[first + 3] != "LZEND") return std::nullopt;
  Envelope env;
  long long values[5] = {0, 0, 0, 0, 0};
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
      while (n < rest.size() && rest[n] >= '0' && rest[n] <= '9') v = v * 10 + (rest[n++] - '0');
      if (n == 0) return std::nullopt;
      value = negative ? -v : v;
      rest.remove_prefix(n);
    }
  }
  env.exit_code = static_cast<int>(values[0]);
  env.timed_out = values[1] != 0;
  env.over_limit = values[2] != 0;
  env.out_size = static_cast<std::uint64_t>(values[3]);
  env.err_size = static_cast<std::uint64_t>(values[4]);
  const auto decode = [](std::string_view line) -> std::optional<std::string> {
    if (!line.empty() && line.front() == 'b') return api::base64_decode(line.substr(1));
    return std::nullopt;
  };
  env.out = decode(lines[first + 1]);
  env.err = decode(lines[first + 2]);
  return env;
}

std::vector<std::string> kill_command(std::string_view run_id) {
  auto argv = helper(kKill, "lizard-kill");
  argv.emplace_back(run_id);
  return argv;
}

std::vector<std::string> probe_command(const std::vector<std::string>& paths) {
  auto argv = helper(kProbe, "lizard-probe");
  argv.insert(argv.end(), paths.begin(), paths.end());
  return argv;
}

std::vector<std::string> mkdir_command(std::string_view path) {
  auto argv = helper(kMkdir, "lizard-mkdir");
  argv.emplace_back(path);
  return argv;
}

std::vector<std::string> realpath_command(std::string_view path) {
  auto argv = helper(kRealpath, "lizard-realpath");
  argv.emplace_back(path);
  return argv;
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
    default:
      return std::nullopt;
  }
}

}  // namespace lizard::workspace::internal
