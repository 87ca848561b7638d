# shellcheck shell=sh
# Cancels a run: kills its command's process group, and the command itself
# (between its fork and its setsid it is not yet the leader of a group of
# its own). $1 the run directory's file prefix. RUN.p is run.sh's: the
# claiming helper's pid, the command's pid (0: never started), then "T",
# "O", the copiers' "z7 N" and "z8 N", and the status line ("S ...") once
# the command ended.
__lz_f=$1.p
# Not claimed yet (the run's exec has not reached the sandbox, or never
# will): claim it as a run that ended cancelled, so that an exec of it that
# arrives later answers that status and starts nothing.
[ -d "${1%/*}" ] || mkdir -p "${1%/*}" 2>/dev/null
set -C
if { printf '0\n0\nS 137 0 0 0 0 0\n' >"$__lz_f"; } 2>/dev/null; then exit 0; fi
set +C
__lz_i=0
while :; do
  __lz_p=
  __lz_s=
  {
    read -r __lz_h
    read -r __lz_p
    while read -r __lz_v; do
      case $__lz_v in "S "*) __lz_s=1 ;; esac
    done
  } 2>/dev/null <"$__lz_f"
  { [ -n "$__lz_p" ] || [ "$__lz_i" -ge 50 ]; } && break
  sleep 0.1
  __lz_i=$((__lz_i + 1))
done
# Ended already: its group may hold background children the run left
# running on purpose, and its pid may belong to another process by now.
[ -n "$__lz_s" ] && exit 0
case $__lz_p in '' | *[!0-9]* | 0 | 1) exit 0 ;; esac
kill -KILL -"$__lz_p" 2>/dev/null
kill -KILL "$__lz_p" 2>/dev/null
exit 0
