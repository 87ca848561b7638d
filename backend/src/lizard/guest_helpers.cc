#include "lizard/guest_helpers.h"

#include <cerrno>
#include <stdexcept>

#include "lizard/api/codec.h"
#include "lizard/workspace/utf8.h"

namespace lizard::workspace::internal {

namespace {

// The most digits of an envelope number parsed: 10^18 - 1 fits a long long.
constexpr std::size_t kMaxEnvelopeDigits = 18;

// The run helper. The exec starts it as `setsid -f -w /bin/sh -c SCRIPT ...`:
// setsid forks it into a session of its own, so the server's per-request kill
// (of the exec's process group) stops only the waiting setsid, never the
// helper; a re-sent request finds the claim file and only waits for the
// status, so the command never starts twice. One process does everything, and
// a run of `true` costs four process starts in the sandbox (setsid, sh,
// setsid, the command) plus an output watcher that forks and sleeps beside
// it; docs/performance.md has the figures.
//
// The command writes straight into files (nothing reads its streams, so a
// background child holding stdout cannot hold the result). A watcher checks
// the file sizes (20 ms, then up to every 200 ms while nothing grows) and
// kills the group when a stream passes the limit; the sizes at exit decide
// too. A timeout watchdog runs only when a timeout is set. Variables carry a
// __lz_ prefix because a name the caller passed in env is exported, and
// assigning it would change the command's environment.
constexpr std::string_view kRunHelper = R"SH(__lz_r=/tmp/.lizard/$1
__lz_t=$2
__lz_l=$3
__lz_c=$4
__lz_b=$5
shift 5
[ -d /tmp/.lizard ] || mkdir -p /tmp/.lizard 2>/dev/null
set -C
if { true >"$__lz_r.p"; } 2>/dev/null; then
  set +C
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
  # A shell cannot un-ignore a signal ignored on entry, and a server may start
  # us with SIGPIPE ignored; the command must start with it at its default (a
  # writer to a closed stream dies quietly, as on a terminal). SigIgn is read
  # with builtins; only when SIGPIPE is ignored (or /proc is missing) does env
  # (coreutils >= 8.31) reset it, unless argv[0] holds "=" (env would take it
  # as an assignment).
  __lz_i=1
  if [ -r /proc/$$/status ]; then
    while read -r __lz_k __lz_v; do
      [ "$__lz_k" = SigIgn: ] || continue
      __lz_v=${__lz_v#"${__lz_v%????}"}
      [ $((0x$__lz_v & 4096)) -eq 0 ] && __lz_i=0
      break
    done </proc/$$/status
  fi
  if [ "$__lz_i" = 1 ]; then
    case $1 in
      *=*) ;;
      *) env --default-signal=PIPE true 2>/dev/null && set -- env --default-signal=PIPE -- "$@" ;;
    esac
  fi
  setsid -- "$@" </dev/null >"$__lz_r.o" 2>"$__lz_r.e" &
  __lz_p=$!
  echo "$__lz_p" >"$__lz_r.p"
  if [ -n "$__lz_c" ]; then
    (
      cd /tmp/.lizard || exit 0
      set --
      for __lz_i in $__lz_c; do set -- "$@" "$__lz_i" "$__lz_i".*; done
      rm -rf -- "$@"
    ) </dev/null >/dev/null 2>&1 &
  fi
  (
    # Stopped when the command ends; it takes its sleep along.
    trap 'kill $! 2>/dev/null; exit 0' TERM
    __lz_i=0
    __lz_z=
    while :; do
      case $__lz_i in 0) sleep 0.02 & ;; 1) sleep 0.05 & ;; 2) sleep 0.1 & ;; *) sleep 0.2 & ;; esac
      wait $!
      __lz_i=$((__lz_i + 1))
      if [ -s "$__lz_r.o" ] || [ -s "$__lz_r.e" ]; then
        set -- $(stat -c %s -- "$__lz_r.o" "$__lz_r.e" 2>/dev/null)
        if [ "${1:-0}" -gt "$__lz_l" ] || [ "${2:-0}" -gt "$__lz_l" ]; then
          : >"$__lz_r.over"
          kill -KILL -"$__lz_p" 2>/dev/null
          exit 0
        fi
        [ "$1 $2" != "$__lz_z" ] && __lz_i=0
        __lz_z="$1 $2"
      fi
    done
  ) </dev/null >/dev/null 2>&1 &
  __lz_w=$!
  __lz_k=
  if [ "$__lz_t" -gt 0 ]; then
    (
      trap 'kill $! 2>/dev/null; exit 0' TERM
      sleep "$((__lz_t / 1000)).$(printf %03d $((__lz_t % 1000)))" &
      wait $! || exit 0
      : >"$__lz_r.to"
      kill -TERM -"$__lz_p" 2>/dev/null
      sleep 2 &
      wait $!
      kill -KILL -"$__lz_p" 2>/dev/null
    ) </dev/null >/dev/null 2>&1 &
    __lz_k=$!
  fi
  wait "$__lz_p"
  __lz_x=$?
  kill "$__lz_w" $__lz_k 2>/dev/null
  __lz_to=0
  if [ -e "$__lz_r.to" ]; then
    __lz_to=1
    kill -KILL -"$__lz_p" 2>/dev/null
  fi
  __lz_os=0
  __lz_es=0
  if [ -s "$__lz_r.o" ] || [ -s "$__lz_r.e" ]; then
    set -- $(stat -c %s -- "$__lz_r.o" "$__lz_r.e" 2>/dev/null)
    __lz_os=${1:-0}
    __lz_es=${2:-0}
  fi
  __lz_ov=0
  if [ -e "$__lz_r.over" ] || [ "$__lz_os" -gt "$__lz_l" ] || [ "$__lz_es" -gt "$__lz_l" ]; then
    __lz_ov=1
    kill -KILL -"$__lz_p" 2>/dev/null
  fi
  # One small write: a reader that sees the file non-empty sees all of it.
  echo "$__lz_x $__lz_to $__lz_ov $__lz_os $__lz_es" >"$__lz_r.s"
else
  set +C
fi
while [ ! -s "$__lz_r.s" ]; do
  if [ ! -e "$__lz_r.p" ]; then echo "LZFAIL the run files are gone"; exit 0; fi
  sleep 0.05
done
read __lz_x __lz_to __lz_ov __lz_os __lz_es <"$__lz_r.s"
echo "LZ1 $__lz_x $__lz_to $__lz_ov $__lz_os $__lz_es"
__lz_emit() {
  if [ "$3" != 1 ]; then
    echo -
  elif [ "$2" -gt 0 ] && [ -s "$1" ]; then
    printf b
    head -c "$2" "$1" | base64 -w0
    echo
  else
    echo b
  fi
}
if [ "$__lz_ov" = 1 ]; then
  __lz_emit "$__lz_r.o" 65536 1
  __lz_emit "$__lz_r.e" 65536 1
else
  __lz_oi=0
  __lz_ei=0
  if [ $((__lz_os + __lz_es)) -le "$__lz_b" ]; then
    __lz_oi=1
    __lz_ei=1
  else
    [ "$__lz_os" -le $((__lz_b / 2)) ] && __lz_oi=1
    [ "$__lz_es" -le $((__lz_b / 2)) ] && __lz_ei=1
  fi
  __lz_emit "$__lz_r.o" "$__lz_os" "$__lz_oi"
  __lz_emit "$__lz_r.e" "$__lz_es" "$__lz_ei"
fi
echo LZEND
)SH";

// Kills the group, and the process itself: between its fork and its
// setsid() the command is not yet the leader of a group of its own.
constexpr std::string_view kKill = R"SH(f=/tmp/.lizard/$1.p
[ -e "$f" ] || exit 0
i=0
while [ ! -s "$f" ] && [ "$i" -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
read p <"$f" 2>/dev/null
[ -n "$p" ] && { kill -KILL -"$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; }
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
  // Appended rather than `"r" + std::string(item)`: gcc 12 at -O3 reports a
  // false -Wrestrict overlap in the operator+ overloads.
  const bool raw = is_valid_utf8(item);
  std::string encoded(1, raw ? 'r' : 'b');
  encoded.append(raw ? std::string(item) : api::base64_encode(item));
  return encoded;
}

std::vector<std::string> run_command(const RunSpec& spec) {
  std::string cleanup;
  for (const auto& id : spec.cleanup) {
    if (!cleanup.empty()) cleanup += ' ';
    cleanup += id;
  }
  std::vector<std::string> argv = {
      "setsid", "-f", "-w", "/bin/sh", "-c", std::string(kRunHelper), "lizard-run"};
  argv.push_back(spec.run_id);
  argv.push_back(std::to_string(spec.timeout_ms));
  argv.push_back(std::to_string(spec.limit_bytes));
  argv.push_back(cleanup);
  argv.push_back(std::to_string(spec.inline_budget));
  for (const auto& item : spec.argv) argv.push_back(encode_item(item));
  return argv;
}

std::string run_file(std::string_view run_id, std::string_view suffix) {
  return std::string(kRunRoot) + "/" + std::string(run_id) + "." + std::string(suffix);
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
