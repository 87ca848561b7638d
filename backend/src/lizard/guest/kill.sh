# shellcheck shell=sh
# Cancels a run: kills its command's process group, and the command itself
# (between its fork and its setsid it is not yet the leader of a group of
# its own). $1 the run directory's file prefix.
__lz_f=$1.p
[ -e "$__lz_f" ] || exit 0
__lz_i=0
while [ ! -s "$__lz_f" ] && [ "$__lz_i" -lt 50 ]; do sleep 0.1; __lz_i=$((__lz_i + 1)); done
read -r __lz_p <"$__lz_f" 2>/dev/null
[ -n "$__lz_p" ] && { kill -KILL -"$__lz_p" 2>/dev/null; kill -KILL "$__lz_p" 2>/dev/null; }
exit 0
