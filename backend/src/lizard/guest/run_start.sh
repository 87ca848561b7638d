# shellcheck shell=sh
# The first moment of a run (lizard::workspace::internal::run_command).
#
# The exec API starts this with the run's fields as arguments: the run id,
# its settings, and the command's environment and argv (each encoded: "r"
# then the UTF-8 text, or "b" then base64). $0 is the text of run.sh.
#
# Arguments are what `pkill -f` and `ps` read, so none of the command's text
# may stay in a long-lived process's argument list: every field moves into
# this process's environment (__lz_0, __lz_1, ...), and run.sh takes it from
# there. run.sh's own text goes the same way (__lz_s): a command's
# `pkill -f sleep` (or kill, stat, head, env...) must not match the helper's
# command line either. setsid -f forks run.sh into a session of its own, so
# the server's per-request kill of the exec's process group never reaches
# it; -w keeps this exec waiting for it, so a short run costs one request.
__lz_i=0
for __lz_a do
  export "__lz_$__lz_i=$__lz_a"
  __lz_i=$((__lz_i + 1))
done
export __lz_s="$0"
# shellcheck disable=SC2016 # expanded by the shell that setsid starts
exec setsid -f -w /bin/sh -c 'eval "$__lz_s"' lizard-run "$__lz_i"
