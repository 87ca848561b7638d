# shellcheck shell=sh
# The run helper (lizard::workspace::internal::run_command), started by
# run_start.sh as `sh -c 'eval "$__lz_s"' lizard-run N` in a session of its
# own, this text in __lz_s and the run's N fields in the environment
# variables __lz_0 .. __lz_{N-1}:
#   0 run id, 1 timeout in ms (0: none), 2 output limit per stream in bytes,
#   3 run ids whose files to remove, 4 bytes of output sent inline,
#   5 the directory of the run files, 6 the working directory, 7 E, the
#   number of environment entries; then E entries NAME=VALUE and the
#   command's argv. Field 6 and those after E are encoded: "r" then UTF-8
#   text, or "b" then base64.
#
# Idempotent by run id: the first start claims RUN.p and starts the command;
# a re-sent or re-attaching exec finds the claim and only waits for the
# status, so a command never starts twice. The run's files live in field 5
# (/root/.lizard, not /tmp, which commands clean up): RUN.p the claim, made
# with this helper's pid as its first line; then lines appended through a
# descriptor held open: the command's pid, "T" when the timeout fired, "O"
# when the output went over the limit, "z7 N" and "z8 N" when a copier
# (below) ended with N bytes in its stream, and last the status ("S ...");
# RUN.o and RUN.e the output. Three files, no more: creating one costs up
# to a millisecond on some file systems. The helper and its copiers or watchers
# keep every file open and use only those descriptors, so a command that
# deletes the files still gets its result, its timeout and its output limit.
#
# The command's stdout and stderr are pipes, as they are to a local command:
# a file can be opened again with O_TRUNC (`echo x > /dev/stderr` reopens
# /proc/self/fd/2), which emptied what the stream held before; a pipe
# cannot. No program makes them: a here-document is a pipe in dash, ash and
# bash 5.1 and later, and /proc/self/fd/N of its read end opens the write
# end. A copier per stream (a shell and its cat) copies the pipe into the
# stream's file, stops at the limit, and then stops the command's group at
# once. The copiers end when every writer closed. A copier whose pipe
# another process holds (a background child holding a stream must not hold
# the result; that copier goes on copying until its holder ends) is waited
# for until its cat sleeps on the empty pipe, so that all the command wrote
# is in the answer, for about 2 s at most (200 ms where the kernel shows no
# wait channels or children, as gVisor); one that nothing holds, up to 10 s
# (it is only slow). Where the shell makes no pipes, or without
# /proc, the command writes the files itself and an output watcher polls
# their sizes.
#
# A run of `true` starts seven programs (docs/performance.md): run_start.sh's
# sh, setsid -f -w, this shell, the command's setsid, true and the copiers'
# two cats. The sizes of empty streams, the SIGPIPE check, the lookup of
# this shell's setsid and the wait for the copiers are builtins: no program.
# Each stream sent inline that has bytes adds a head and a base64. The
# copiers write the streams' sizes, so nothing else measures them; where a
# copier had not ended when the answer was made (a background child held
# its stream), the head also tells a stream's size when it is small (at
# most the limit and half the inline budget), and a larger one adds one
# stat for both.
#
# Answer on stdout:
#   LZ2 EXIT TIMEDOUT OVERLIMIT OUTSIZE ERRSIZE ERRNO
#   the stdout line, the stderr line ("b" + base64 of the bytes, or "-" when
#   not inline: read RUN.o / RUN.e with the files API)
#   LZEND
# ERRNO is non-zero when the command could not be started (7: E2BIG).
# Helper variables carry the __lz_ prefix; the command's environment is
# built apart from this shell's, so nothing of it changes the helper (IFS,
# PATH, names it uses itself).

unset __lz_s
__lz_n=$1
__lz_k=0
__lz_field() {
  eval "__lz_v=\${__lz_$__lz_k-}"
  unset "__lz_$__lz_k"
  __lz_k=$((__lz_k + 1))
}
__lz_decoded() {
  __lz_field
  case $__lz_v in
    r*) __lz_v=${__lz_v#r} ;;
    *) __lz_v=$(printf '%s' "${__lz_v#b}" | base64 -d && printf x); __lz_v=${__lz_v%x} ;;
  esac
}
__lz_field; __lz_id=$__lz_v
__lz_field; __lz_t=$__lz_v
__lz_field; __lz_l=$__lz_v
__lz_field; __lz_c=$__lz_v
__lz_field; __lz_b=$__lz_v
__lz_field; __lz_d=$__lz_v
__lz_decoded; __lz_wd=$__lz_v
__lz_field; __lz_ne=$__lz_v
# The helper's own setsid, found on its PATH with builtins (a caller's PATH
# must not decide which setsid starts the command).
__lz_which_setsid() {
  __lz_pv=$PATH:
  __lz_setsid=
  while [ -n "$__lz_pv" ]; do
    __lz_pd=${__lz_pv%%:*}
    __lz_pv=${__lz_pv#*:}
    if [ -f "${__lz_pd:-.}/setsid" ] && [ -x "${__lz_pd:-.}/setsid" ]; then
      __lz_setsid=${__lz_pd:-.}/setsid
      return 0
    fi
  done
}
# Field 33 of /proc/self/stat, the ignored signals, counted from the state
# (field 3) so that the name in parentheses is passed over whatever it holds.
__lz_sigignored() { __lz_v=${31:-0}; }
# __lz_g becomes the words "$P0" "$P1" .. "$P{N-1}" (P=$1, N=$2), for one
# `eval "set -- $__lz_g"`. Adding items to "$@" one at a time copies the
# list each time (30,000 items took 47 s); so does growing one string, so
# the words go into chunks of 500 (__lz_g500 ..), joined once at the end.
__lz_refs() {
  __lz_i=0
  __lz_g=
  __lz_gs=
  while [ "$__lz_i" -lt "$2" ]; do
    __lz_g="$__lz_g \"\$$1$__lz_i\""
    __lz_i=$((__lz_i + 1))
    case $__lz_i in *[05]00) eval "__lz_g$__lz_i=\$__lz_g"; __lz_gs="$__lz_gs \$__lz_g$__lz_i"; __lz_g= ;; esac
  done
  eval "__lz_g=\"$__lz_gs\$__lz_g\""
}
# __lz_v becomes /proc/uptime in hundredths of a second; empty without it.
__lz_uptime() {
  __lz_v=
  { read -r __lz_v __lz_i; } 2>/dev/null </proc/uptime
  case $__lz_v in
    *[0-9].[0-9][0-9]) __lz_v=${__lz_v%.*}${__lz_v#*.} ;;
    *) __lz_v= ;;
  esac
}
# The status line of RUN.p ($1) into __lz_x .. __lz_errno; false until it
# is there. __lz_h becomes the first line, the pid of the claiming helper.
__lz_status() {
  __lz_h=
  {
    read -r __lz_h
    while read -r __lz_v; do
      case $__lz_v in
        "S "*)
          # shellcheck disable=SC2086 # the fields, split into $1 ..
          set -- $__lz_v
          __lz_x=$2 __lz_to=$3 __lz_ov=$4 __lz_os=$5 __lz_es=$6 __lz_errno=$7
          return 0
          ;;
      esac
    done
  } 2>/dev/null <"$1"
  return 1
}
# Stream $1 (7 or 8) read whole from its held descriptor, through a new
# open file (the descriptor stays at offset 0), when it holds at most __lz_m
# bytes: its answer line ("b" + base64) in __lz_line$1 and its size in
# __lz_$2 (os or es), the count of the bytes read (__lz_count). False when
# it holds more, or when a stream that is not empty reads as nothing.
__lz_read_whole() {
  __lz_n=0
  eval "__lz_line$1=b"
  if [ -s "/proc/self/fd/$1" ]; then
    __lz_v=$(head -c "$((__lz_m + 1))" "/proc/self/fd/$1" | base64 -w0)
    __lz_count
    { [ "$__lz_n" -gt 0 ] && [ "$__lz_n" -le "$__lz_m" ]; } || return 1
    eval "__lz_line$1=b\$__lz_v"
  fi
  eval "__lz_$2=\$__lz_n"
}
# __lz_n becomes the count of the bytes that the base64 in __lz_v holds:
# four characters for three bytes, less one for each "="; -1 when its
# length is not a multiple of four.
__lz_count() {
  __lz_n=0
  case $__lz_v in *==) __lz_n=2 ;; *=) __lz_n=1 ;; esac
  if [ $((${#__lz_v} % 4)) = 0 ]; then
    __lz_n=$((${#__lz_v} * 3 / 4 - __lz_n))
  else
    __lz_n=-1
  fi
}
# True when both copiers wrote their sizes (z7 and z8 in RUN.p, read into
# __lz_z7 and __lz_z8) and one of them is over __lz_m: no stream needs to be
# read to learn its size, and the sizes need no stat. A line that a command
# wrote into RUN.p itself decides nothing: the answer's streams are read
# through head up to these sizes, and the backend takes a stream only when
# it holds its size.
__lz_sized_large() {
  case $__lz_z7:$__lz_z8 in :* | *: | *[!0-9:]*) return 1 ;; esac
  [ "$__lz_z7" -gt "$__lz_m" ] || [ "$__lz_z8" -gt "$__lz_m" ]
}
# A stream's copier, started in the background as `__lz_copy PIPE FILE`
# (descriptors: 5 and 7, or 6 and 8), which it takes as stdin and stdout
# (appending) with exec: redirections on the call would keep a saved copy of
# every descriptor they replace (the exec's stdout among them) in this
# shell for as long as it copies. The copy is cat, which writes what it
# reads at once (head -c keeps up to 4 KiB in its stdio buffer until it
# ends, which a background child holding the stream delays), under a file
# size limit of the limit rounded up to whole blocks of 512 bytes (ulimit
# -f, POSIX's unit), EFBIG rather than SIGXFSZ. The stream is over the
# limit when the file holds more than the limit, or when cat failed with
# the file at the limit: a limit of whole blocks (10 MiB) stops cat at its
# first byte over. Then, unless the run has its status
# already (a background child of it wrote that much later), an "O" line in
# RUN.p and the command's group stopped. The file's size is the offset of
# stdout, which cat shares, in /proc/self/fdinfo/1.
__lz_copy() {
  exec <&"$1" >>"/proc/self/fd/$2" 2>/dev/null 3>&- 4>&- 5<&- 6<&- 7<&- 8<&-
  trap '' XFSZ
  ulimit -f $(((__lz_l + 511) / 512)) 2>/dev/null
  cat
  __lz_x=$?
  __lz_v=
  { read -r __lz_v __lz_v </proc/self/fdinfo/1; } 2>/dev/null
  case $__lz_v in '' | *[!0-9]*) __lz_v=$(stat -L -c %s /proc/self/fd/1 2>/dev/null) ;; esac
  # A size that nothing tells, after cat failed, counts as over: the file at
  # the limit would otherwise pass for the whole stream.
  case $__lz_v in
    '' | *[!0-9]*)
      [ "$__lz_x" = 0 ] && return 0
      __lz_v=$((__lz_l + 1))
      ;;
  esac
  if [ "$__lz_v" -le "$__lz_l" ] && { [ "$__lz_x" = 0 ] || [ "$__lz_v" != "$__lz_l" ]; }; then
    # The size only when cat copied to the end (a cat that a command killed
    # leaves the size to the answer's own measure).
    [ "$__lz_x" = 0 ] && echo "z$2 $__lz_v" >&9
    return 0
  fi
  __lz_status /proc/self/fd/9 && return 0
  echo O >&9
  kill -KILL -"$__lz_p" 2>/dev/null
}
# True while a copier runs (its stdin is gone once it ended, zombie or not).
__lz_copying() { [ -e "/proc/$__lz_co/fd/0" ] || [ -e "/proc/$__lz_ce/fd/0" ]; }
# Which of the copiers still waited for (__lz_do, __lz_de: 0) another
# process holds (__lz_ho and __lz_he become 1): a writer that keeps the
# pipe open, so that the copier ends only when that process does. A
# descriptor is compared with the copier's stdin by [ -ef ] (both ends of a
# pipe are one inode). First the usual holder: descriptors 1 and 2 of every
# process (no directory listed). Then, only while the command's group
# still has a member, every descriptor of every process, the copiers' own
# cats passed over (their stdin is the pipe). A process of the command's
# session whose descriptors this shell cannot list (a child that changed
# user, or one not dumpable), or a scan still going after about 100 ms of
# wall time and of CPU (__lz_in_time), counts as holding what is still
# undecided, as the group's member may. What this finds no holder for is a
# copier that is only slow. -ef is not POSIX, but dash, bash, busybox ash
# and mksh have it; without it, the group's member may hold both.
# shellcheck disable=SC3013
__lz_holders() {
  __lz_ho=0
  __lz_he=0
  __lz_wo=0
  __lz_we=0
  [ "$__lz_do" = 0 ] && [ -e "/proc/$__lz_co/fd/0" ] && __lz_wo=1
  [ "$__lz_de" = 0 ] && [ -e "/proc/$__lz_ce/fd/0" ] && __lz_we=1
  [ $((__lz_wo + __lz_we)) = 0 ] && return
  if ! [ /proc/self/fd/7 -ef /proc/self/fd/7 ] 2>/dev/null; then
    kill -0 -"$__lz_p" 2>/dev/null && __lz_undecided_held
    return
  fi
  for __lz_f in /proc/[0-9]*/fd/1 /proc/[0-9]*/fd/2; do
    __lz_holds "$__lz_f"
  done 2>/dev/null
  [ $((__lz_wo + __lz_we)) = 0 ] && return
  kill -0 -"$__lz_p" 2>/dev/null || return
  __lz_cputime
  __lz_cpu=$__lz_v
  __lz_tick=
  __lz_uptime
  __lz_end=$__lz_v
  __lz_n=0
  for __lz_d in /proc/[0-9]*; do
    case $__lz_d in "/proc/$__lz_co" | "/proc/$__lz_ce") continue ;; esac
    __lz_seen=0
    for __lz_f in "$__lz_d"/fd/[0-9]*; do
      [ -e "$__lz_f" ] || continue
      __lz_seen=1
      __lz_holds "$__lz_f"
      __lz_n=$((__lz_n + 1))
      case $__lz_n in *[05]0) __lz_in_time || return ;; esac
    done
    [ $((__lz_wo + __lz_we)) = 0 ] && return
    if [ "$__lz_seen" = 0 ] && ! __lz_gone "$__lz_d"; then
      __lz_undecided_held
      return
    fi
    __lz_in_time || return
  done 2>/dev/null
}
# False, with what is undecided held, once the scan has run for about 100 ms
# (ten ticks of /proc/uptime) and used about 100 ms of CPU (__lz_cputime
# against __lz_cpu, read at its start), or for about 1 s whatever it used: a
# loaded machine that gives this shell a small share of a CPU must not cut
# short a scan that is not long (with 40 processes of 100 descriptors each
# and four busy loops on two CPUs, 100 ms of wall time cut it 4 times in 5).
__lz_in_time() {
  __lz_uptime
  if [ -z "$__lz_v" ] || [ -z "$__lz_end" ]; then
    __lz_undecided_held
    return 1
  fi
  [ "$__lz_v" -lt $((__lz_end + 10)) ] && return 0
  if [ "$__lz_v" -lt $((__lz_end + 100)) ] && [ -n "$__lz_cpu" ]; then
    # The CPU time at most once per tick of the wall clock.
    [ "$__lz_v" = "$__lz_tick" ] && return 0
    __lz_tick=$__lz_v
    __lz_cputime
    [ -n "$__lz_v" ] && [ "$__lz_v" -lt $((__lz_cpu + 100000000)) ] && return 0
  fi
  __lz_undecided_held
  return 1
}
# __lz_v becomes this shell's CPU time in nanoseconds (the first field of
# /proc/self/schedstat, a short read); empty without it (gVisor has none).
__lz_cputime() {
  __lz_v=
  { read -r __lz_v __lz_i; } 2>/dev/null </proc/self/schedstat
  # 0: a kernel that keeps no scheduler statistics (sched_info off).
  case $__lz_v in '' | 0 | *[!0-9]*) __lz_v= ;; esac
}
# True when process $1 (/proc/PID), whose descriptors this shell could not
# see, cannot hold the pipes as far as can be told: it is gone, a zombie (a
# watcher just stopped, not reaped yet), a kernel thread (no command line),
# or outside the command's session (only the command's descendants
# inherited the pipes; another user's unrelated processes are elsewhere).
# False for a process of the command's session that keeps its descriptors
# from this shell (a child that changed user, or one not dumpable).
__lz_gone() {
  # An empty command line first: a kernel thread or a zombie, in one read.
  __lz_v=
  { read -r __lz_v; } 2>/dev/null <"$1/cmdline"
  [ -z "$__lz_v" ] && return 0
  { read -r __lz_v; } 2>/dev/null <"$1/stat" || return 0
  # shellcheck disable=SC2086 # the fields from the state on: $4 the session
  set -- ${__lz_v##*") "}
  case $1 in Z* | X*) return 0 ;; esac
  [ "${4-}" != "$__lz_p" ]
}
__lz_undecided_held() {
  [ "$__lz_wo" = 1 ] && __lz_ho=1
  [ "$__lz_we" = 1 ] && __lz_he=1
  __lz_wo=0
  __lz_we=0
}
# Descriptor $1 (/proc/PID/fd/N) against the copiers' pipes still undecided.
# shellcheck disable=SC3013
__lz_holds() {
  if [ "$__lz_wo" = 1 ] && [ "$1" -ef "/proc/$__lz_co/fd/0" ] && ! __lz_cat_of "$1" "$__lz_co"; then
    __lz_ho=1
    __lz_wo=0
  fi
  if [ "$__lz_we" = 1 ] && [ "$1" -ef "/proc/$__lz_ce/fd/0" ] && ! __lz_cat_of "$1" "$__lz_ce"; then
    __lz_he=1
    __lz_we=0
  fi
}
# True when descriptor $1 is the stdin of a child of copier $2: its cat.
__lz_cat_of() {
  case $1 in */fd/0) ;; *) return 1 ;; esac
  __lz_v=
  { read -r __lz_v; } 2>/dev/null <"${1%/fd/0}/stat"
  # shellcheck disable=SC2086 # the fields after the name: state, parent ..
  set -- "$2" ${__lz_v##*") "}
  [ "${3-}" = "$1" ]
}
# True when copier $1's cat sleeps in a read of its empty pipe: its wait
# channel (/proc/PID/wchan) is the pipe's read (pipe_read, anon_pipe_read
# since Linux 6.15, pipe_wait before 5.5), and it sleeps interruptibly
# (state S, read between two reads of the channel): the wait for data.
# Blocked on the pipe's lock, which another writer may hold with bytes
# behind it (a splice from a socket), it shows the same channel in state D.
# Then every byte written to the pipe before now is in the stream's file
# (cat writes what it read before it reads again). Only where __lz_wchan
# is 1 (__lz_drain).
__lz_drained() {
  __lz_v=
  { read -r __lz_v; } 2>/dev/null <"/proc/$1/task/$1/children"
  set -- "${__lz_v%% *}"
  [ -n "$1" ] || return 1
  __lz_pipe_wait "$1" || return 1
  __lz_v=
  { read -r __lz_v && read -r __lz_v && case $__lz_v in State:*) ;; *) read -r __lz_v ;; esac; } \
    2>/dev/null <"/proc/$1/status"
  # shellcheck disable=SC2086 # "State:" S (sleeping)
  set -- "$1" $__lz_v
  [ "${2-}" = State: ] && [ "${3-}" = S ] && __lz_pipe_wait "$1"
}
__lz_pipe_wait() {
  __lz_i2=
  { read -r __lz_i2; } 2>/dev/null <"/proc/$1/wchan"
  case $__lz_i2 in *pipe_read | pipe_wait) return 0 ;; esac
  return 1
}
# True while the answer waits for copier $1 (its pipe held by another
# process when $2 is 1) at the __lz_i-th poll: it runs, its cat has not
# been seen on an empty pipe, and it is within its time. That is up to 10 s
# when nothing else holds its pipe (it is only slow). A held copier gets
# 200 ms; about 2 s where the kernel tells wait channels, since there the
# wait ends as soon as it has copied what the command wrote, which the
# answer must carry.
__lz_waits() {
  [ -e "/proc/$1/fd/0" ] || return 1
  [ "$__lz_wchan" = 1 ] && __lz_drained "$1" && return 1
  [ "$2" = 0 ] || [ "$__lz_i" -lt 4 ] || { [ "$__lz_wchan" = 1 ] && [ "$__lz_i" -lt 40 ]; }
}
# Waits for the copiers: with builtins for one to two ticks of /proc/uptime
# (a copier ends within a millisecond of its last writer), then in sleeps of
# 50 ms. A copier whose cat sleeps on its empty pipe has copied all that
# the command wrote (another process holds the pipe, as __lz_waits above):
# it is not waited for, and when none is left to wait for, the helper does
# not look for the holders either. Otherwise a copier whose pipe another
# process may still hold (__lz_holders: a background child of the command,
# in its group or not) is waited for as __lz_waits says: that child must
# not hold the result. One that nothing else holds is only slow (a loaded
# machine: under 16 threads of commands a copier took over 200 ms) and has
# the rest of its pipe to copy: up to 10 s.
__lz_drain() {
  __lz_copying || return 0
  __lz_uptime
  __lz_end=$__lz_v
  while [ -n "$__lz_end" ] && __lz_copying; do
    __lz_uptime
    { [ -n "$__lz_v" ] && [ "$__lz_v" -lt $((__lz_end + 2)) ]; } || break
  done
  # Whether this kernel tells a copier's cat and where it waits: this
  # shell's parent (setsid -w, waiting for it) shows a wait channel, and a
  # process lists its children (CONFIG_PROC_CHILDREN). gVisor does neither.
  __lz_wchan=0
  __lz_v=
  { read -r __lz_v; } 2>/dev/null <"/proc/$PPID/wchan"
  case $__lz_v in '' | 0) ;; *) [ -e "/proc/$$/task/$$/children" ] && __lz_wchan=1 ;; esac
  __lz_i=0
  __lz_do=0
  __lz_de=0
  __lz_waits "$__lz_co" 0 || __lz_do=1
  __lz_waits "$__lz_ce" 0 || __lz_de=1
  [ $((__lz_do + __lz_de)) = 2 ] && return
  __lz_holders
  __lz_i=0
  while [ "$__lz_i" -lt 200 ]; do
    [ "$__lz_do" = 0 ] && ! __lz_waits "$__lz_co" "$__lz_ho" && __lz_do=1
    [ "$__lz_de" = 0 ] && ! __lz_waits "$__lz_ce" "$__lz_he" && __lz_de=1
    [ $((__lz_do + __lz_de)) = 2 ] && break
    sleep 0.05
    __lz_i=$((__lz_i + 1))
  done
}
# The environment entries (as __lz_e0 ..), then the argv (as "$@"). Their
# total size, for the E2BIG check.
__lz_size=0
__lz_j=0
while [ "$__lz_j" -lt "$__lz_ne" ]; do
  __lz_decoded
  eval "__lz_e$__lz_j=\$__lz_v"
  __lz_size=$((__lz_size + ${#__lz_v} + 9))
  __lz_j=$((__lz_j + 1))
done
# The argv items as __lz_a0 .., then one `set --` of them all.
__lz_j=0
while [ "$__lz_k" -lt "$__lz_n" ]; do
  __lz_decoded
  eval "__lz_a$__lz_j=\$__lz_v"
  __lz_size=$((__lz_size + ${#__lz_v} + 9))
  __lz_j=$((__lz_j + 1))
done
__lz_refs __lz_a "$__lz_j"
eval "set -- $__lz_g"

[ -d "$__lz_d" ] || mkdir -p "$__lz_d" 2>/dev/null
__lz_r=$__lz_d/$__lz_id
set -C
if { echo "$$" >"$__lz_r.p"; } 2>/dev/null; then
  set +C
  # Every file of the run, opened once: 9 appends to RUN.p (the watchers
  # inherit it), 4 reads it back from its start, 7 and 8 hold the output.
  # Gone already (a command of another run removed the directory): nothing
  # was started, and the answer says so.
  # shellcheck disable=SC2094 # one file, appended to on 9 and read on 4
  if ! { command exec 9>>"$__lz_r.p" 4<"$__lz_r.p" 7<>"$__lz_r.o" 8<>"$__lz_r.e"; } 2>/dev/null; then
    echo "LZFAIL the run's files were removed as it started"
    exit 0
  fi
  __lz_x=
  __lz_errno=0
  # A command the kernel cannot start with this much argument and
  # environment text (ARG_MAX): E2BIG, said as a number.
  if [ "$__lz_size" -gt 131072 ]; then
    __lz_max=$(getconf ARG_MAX 2>/dev/null || echo 2097152)
    [ "$__lz_size" -gt $((__lz_max - 65536)) ] && __lz_errno=7
  fi
  # How the command starts: setsid makes it the leader of a group of its
  # own. Variables with names a shell can export are exported in the child;
  # any other name (A B, 1X, a name this helper uses), a name some /bin/sh
  # keeps for itself (dash refuses OPTIND=abc; bash has read-only UID, PPID,
  # SHELLOPTS and drops or rewrites RANDOM, SECONDS, _ ...), or a SIGPIPE
  # this shell was started with ignored (a shell cannot un-ignore it), goes
  # through env(1).
  __lz_setsid=setsid
  __lz_env=0
  __lz_abs=0
  __lz_j=0
  while [ "$__lz_j" -lt "$__lz_ne" ]; do
    eval "__lz_v=\$__lz_e$__lz_j"
    case ${__lz_v%%=*} in
      __lz*|''|[0-9]*|*[!A-Za-z0-9_]*) __lz_env=1 ;;
      OPTIND|OPTARG|IFS|PS4|ENV|PPID|UID|EUID|GROUPS|_|RANDOM|SRANDOM|SECONDS|LINENO) __lz_env=1 ;;
      HISTCMD|FUNCNAME|SHELLOPTS|BASHOPTS|BASHPID|BASH*|EPOCHSECONDS|EPOCHREALTIME) __lz_env=1 ;;
      PATH) __lz_abs=1 ;;
    esac
    __lz_j=$((__lz_j + 1))
  done
  # SIGPIPE (signal 13, mask 4096) in the ignored set: one line of
  # /proc/self/stat, read with builtins (the shell reads a byte per system
  # call: the shortest file that has it, about 300 bytes where the SigIgn
  # line of /proc/self/status is 800 in). Without /proc the command starts
  # as this shell was started.
  __lz_sigpipe=
  if { read -r __lz_v; } 2>/dev/null </proc/self/stat; then
    # shellcheck disable=SC2086 # the fields after the name, split into $1 ..
    __lz_sigignored ${__lz_v#*") "}
    case $__lz_v in *[!0-9]*) __lz_v=0 ;; esac
    [ $((__lz_v & 4096)) -ne 0 ] && __lz_sigpipe=--default-signal=PIPE
  fi
  [ -n "$__lz_sigpipe" ] && __lz_env=1
  # With env(1) in between, the command's PATH would decide too.
  { [ "$__lz_abs" = 1 ] || [ "$__lz_env" = 1 ]; } && __lz_which_setsid
  # The sizes come from the held descriptors through /proc/self/fd (a new
  # open file, so the answer still reads them from their start), and the
  # command's streams are opened the same way: all of it works on files a
  # command deleted. Without /proc, the paths; wc -c measures the sizes on
  # descriptors of their own, as it moves the offset of the one it reads.
  __lz_proc=1
  __lz_ro=/proc/self/fd/7
  __lz_re=/proc/self/fd/8
  if [ ! -e /proc/self/fd/7 ]; then
    __lz_proc=0
    __lz_ro=$__lz_r.o
    __lz_re=$__lz_r.e
    exec 5<"$__lz_r.o" 6<"$__lz_r.e"
  fi
  # The streams' pipes (see the top): read ends on 5 and 6, write ends on 3
  # and 4 (RUN.p's reading descriptor, opened again once the command ended),
  # until the command and the copiers have theirs: a copier that started
  # before the command opened its end would otherwise read an end of file
  # and leave the command a pipe without a reader (SIGPIPE). A
  # here-document that is not a pipe (a file, /dev/null) leaves the files,
  # as does __lz_files in the helper's environment (the tests of the files'
  # way).
  __lz_pipes=0
  __lz_so=$__lz_ro
  __lz_se=$__lz_re
  if [ "$__lz_proc" = 1 ] && [ "$__lz_errno" = 0 ] && [ -z "${__lz_files-}" ]; then
    exec 5<<'__lz_E'
-
__lz_E
    exec 6<<'__lz_E'
-
__lz_E
    if { read -r __lz_v <&5 && read -r __lz_v <&6 && [ -p /proc/self/fd/5 ] && [ -p /proc/self/fd/6 ] &&
      command exec 3>/proc/self/fd/5 4>/proc/self/fd/6; } 2>/dev/null; then
      __lz_pipes=1
      __lz_so=/proc/self/fd/3
      __lz_se=/proc/self/fd/4
    else
      exec 3>&- 5<&- 6<&-
    fi
  fi
  if [ "$__lz_errno" = 0 ]; then
    (
      cd -- "$__lz_wd" 2>/dev/null || { echo "lizard: cannot enter $__lz_wd" >&2; exit 126; }
      if [ "$__lz_env" = 1 ]; then
        __lz_refs __lz_e "$__lz_ne"
        eval "set -- $__lz_g \"\$__lz_setsid\" -- \"\$@\""
        exec env $__lz_sigpipe -- "$@"
      fi
      __lz_j=0
      while [ "$__lz_j" -lt "$__lz_ne" ]; do
        eval "export \"\$__lz_e$__lz_j\""
        __lz_j=$((__lz_j + 1))
      done
      exec "$__lz_setsid" -- "$@"
    ) </dev/null >>"$__lz_so" 2>>"$__lz_se" 3>&- 4<&- 5<&- 6<&- 7<&- 8<&- 9<&- &
    __lz_p=$!
  else
    __lz_p=0
  fi
  echo "$__lz_p" >&9
  # The copiers (pipes only), after the command: they know its pid. The
  # helper then holds no end of the pipes.
  __lz_co=
  __lz_ce=
  if [ "$__lz_pipes" = 1 ]; then
    __lz_copy 5 7 &
    __lz_co=$!
    __lz_copy 6 8 &
    __lz_ce=$!
    exec 3>&- 4>&- 5<&- 6<&-
  fi
  __lz_w=
  __lz_kt=
  # Each watcher stops its own sleep when it is stopped: with SIGKILL, as a
  # sleep just forked still has this shell's handler until it execs and
  # would swallow a SIGTERM (dash; the sleep then outlived the run, seen
  # under load). $! is the watcher's own sleep once it started one; before
  # that it is the $! the watcher inherited (__lz_q), which it leaves alone.
  # The watchers start before the removal of earlier runs' files, so that
  # inherited $! is never the removal.
  if [ "$__lz_p" != 0 ] && [ "$__lz_pipes" = 0 ]; then
    # The output watcher (no pipes): checks the sizes (20 ms, then up to
    # every 200 ms while nothing grows) and kills the group past the limit,
    # after an "O" line in RUN.p. Stopped when the command ends; it takes its
    # sleep along. A sleep of it that someone kills only makes a check come
    # early.
    (
      __lz_q=$!
      trap '[ "$!" = "$__lz_q" ] || kill -KILL $! 2>/dev/null; exit 0' TERM
      __lz_i=0
      __lz_z=
      while :; do
        case $__lz_i in 0) sleep 0.02 & ;; 1) sleep 0.05 & ;; 2) sleep 0.1 & ;; *) sleep 0.2 & ;; esac
        wait $!
        __lz_i=$((__lz_i + 1))
        if [ -s "$__lz_ro" ] || [ -s "$__lz_re" ]; then
          # shellcheck disable=SC2046 # two sizes, split into $1 $2
          set -- $(stat -L -c %s -- "$__lz_ro" "$__lz_re" 2>/dev/null)
          if [ "${1:-0}" -gt "$__lz_l" ] || [ "${2:-0}" -gt "$__lz_l" ]; then
            echo O >&9
            kill -KILL -"$__lz_p" 2>/dev/null
            exit 0
          fi
          [ "$1 $2" != "$__lz_z" ] && __lz_i=0
          __lz_z="$1 $2"
        fi
      done
    ) </dev/null >/dev/null 2>&1 &
    __lz_w=$!
  fi
  if [ "$__lz_p" != 0 ] && [ "$__lz_t" -gt 0 ]; then
    # The timeout's watchdog: at the deadline, a "T" line in RUN.p, TERM to
    # the group, KILL 2 s later. The deadline is kept on /proc/uptime (in
    # hundredths of a second): a sleep of it that someone kills (pkill
    # sleep) is started again for what is left, so nothing a command does
    # to sleeps moves the deadline. Without /proc, one sleep.
    (
      __lz_q=$!
      trap '[ "$!" = "$__lz_q" ] || kill -KILL $! 2>/dev/null; exit 0' TERM
      __lz_uptime
      __lz_end=
      [ -n "$__lz_v" ] && __lz_end=$((__lz_v + (__lz_t + 9) / 10))
      __lz_left=$__lz_t
      while :; do
        __lz_ms=$((__lz_left % 1000))
        case $__lz_ms in ?) __lz_ms=00$__lz_ms ;; ??) __lz_ms=0$__lz_ms ;; esac
        sleep "$((__lz_left / 1000)).$__lz_ms" &
        wait $!
        [ -n "$__lz_end" ] || break
        __lz_uptime
        { [ -n "$__lz_v" ] && [ "$__lz_v" -lt "$__lz_end" ]; } || break
        __lz_left=$(((__lz_end - __lz_v) * 10))
      done
      echo T >&9
      kill -TERM -"$__lz_p" 2>/dev/null
      sleep 2 &
      wait $!
      kill -KILL -"$__lz_p" 2>/dev/null
    ) </dev/null >/dev/null 2>&1 &
    __lz_kt=$!
  fi
  if [ -n "$__lz_c" ]; then
    (
      cd "$__lz_d" || exit 0
      set --
      for __lz_i in $__lz_c; do set -- "$@" "$__lz_i" "$__lz_i".*; done
      rm -rf -- "$@"
    ) </dev/null >/dev/null 2>&1 &
  fi
  if [ "$__lz_p" != 0 ]; then
    wait "$__lz_p"
    __lz_x=$?
    # shellcheck disable=SC2086 # the watchers that run, none to two
    kill $__lz_w $__lz_kt 2>/dev/null
    if [ "$__lz_pipes" = 1 ]; then
      __lz_drain
      exec 4</proc/self/fd/9
    fi
  else
    __lz_x=126
  fi
  # What the watchers said, from RUN.p's start (the held descriptor: the
  # file may be gone).
  __lz_to=0
  __lz_ov=0
  __lz_z7=
  __lz_z8=
  while { read -r __lz_v <&4; } 2>/dev/null; do
    case $__lz_v in
      T) __lz_to=1 ;;
      O) __lz_ov=1 ;;
      "z7 "*) __lz_z7=${__lz_v#z7 } ;;
      "z8 "*) __lz_z8=${__lz_v#z8 } ;;
    esac
  done
  [ "$__lz_to" = 1 ] && kill -KILL -"$__lz_p" 2>/dev/null
  # Sizes through the held descriptors (the files may be gone): an empty
  # stream needs no program ([ -s ]); a stream of at most __lz_m bytes (the
  # limit, or half the inline budget when that is less) is read whole into
  # its base64 now (head and base64), and its size is what was read. A
  # larger one: the sizes that both copiers wrote, else one stat for both.
  __lz_os=0
  __lz_es=0
  __lz_whole=0
  __lz_m=$((__lz_b / 2))
  [ "$__lz_l" -lt "$__lz_m" ] && __lz_m=$__lz_l
  if [ "$__lz_proc" = 0 ]; then
    __lz_os=$(wc -c <&5)
    __lz_es=$(wc -c <&6)
  elif [ "$__lz_ov" != 1 ] && [ "$__lz_pipes" = 1 ] && __lz_sized_large; then
    __lz_os=$__lz_z7
    __lz_es=$__lz_z8
  elif [ "$__lz_ov" != 1 ] && __lz_read_whole 7 os && __lz_read_whole 8 es; then
    __lz_whole=1
  elif [ -s /proc/self/fd/7 ] || [ -s /proc/self/fd/8 ]; then
    # shellcheck disable=SC2046 # two sizes, split into $1 $2
    set -- $(stat -L -c %s /proc/self/fd/7 /proc/self/fd/8 2>/dev/null)
    __lz_os=${1-}
    __lz_es=${2-}
    case $__lz_os:$__lz_es in
      :*|*:|*[!0-9:]*)
        __lz_os=$(wc -c </proc/self/fd/7)
        __lz_es=$(wc -c </proc/self/fd/8)
        ;;
    esac
  fi
  if [ "$__lz_ov" = 1 ] || [ "$__lz_os" -gt "$__lz_l" ] || [ "$__lz_es" -gt "$__lz_l" ]; then
    __lz_ov=1
    kill -KILL -"$__lz_p" 2>/dev/null
  fi
  # The status, RUN.p's last line, in one small write: a reader sees all of
  # the line or none of it. (The answer below does not depend on it: a
  # command may have removed the run's files.)
  echo "S $__lz_x $__lz_to $__lz_ov $__lz_os $__lz_es $__lz_errno" 2>/dev/null >&9
  __lz_own=1
else
  # Another exec of this run (a re-send, or a re-attach after the server's
  # limit cut the first): wait for the status line. When the helper that
  # claimed the run (RUN.p's first line) is gone without writing it, no
  # status will come: say so rather than wait for ever.
  set +C
  __lz_own=0
  until __lz_status "$__lz_r.p"; do
    if [ ! -e "$__lz_r.p" ]; then echo "LZFAIL the run files are gone"; exit 0; fi
    if [ -n "$__lz_h" ] && ! kill -0 "$__lz_h" 2>/dev/null; then
      __lz_status "$__lz_r.p" && break
      echo "LZFAIL the run's helper ended before the command's status was known"
      exit 0
    fi
    sleep 0.05
  done
fi
echo "LZ2 $__lz_x $__lz_to $__lz_ov $__lz_os $__lz_es $__lz_errno"
# A stream: "b" + base64 of its first $2 bytes, "-" when not inline. From the
# held descriptor when this process ran the command, else from the file.
__lz_emit() {
  if [ "$3" != 1 ]; then
    echo -
  elif [ "$2" -gt 0 ]; then
    printf b
    if [ "$__lz_own" = 1 ]; then
      eval "head -c \"\$2\" <&$1" | base64 -w0
    else
      case $1 in 7) head -c "$2" -- "$__lz_r.o" ;; *) head -c "$2" -- "$__lz_r.e" ;; esac | base64 -w0
    fi
    echo
  else
    echo b
  fi
}
if [ "$__lz_ov" = 1 ]; then
  __lz_emit 7 65536 1
  __lz_emit 8 65536 1
elif [ "$__lz_own" = 1 ] && [ "$__lz_whole" = 1 ]; then
  # Read whole above: both within half the budget, so both inline.
  # shellcheck disable=SC2154 # __lz_line7 and __lz_line8, set by __lz_read_whole
  printf '%s\n%s\n' "$__lz_line7" "$__lz_line8"
else
  # Inline: both when they fit the budget together, otherwise each that
  # fits half of it.
  __lz_oi=0
  __lz_ei=0
  if [ $((__lz_os + __lz_es)) -le "$__lz_b" ]; then
    __lz_oi=1
    __lz_ei=1
  else
    [ "$__lz_os" -le $((__lz_b / 2)) ] && __lz_oi=1
    [ "$__lz_es" -le $((__lz_b / 2)) ] && __lz_ei=1
  fi
  __lz_emit 7 "$__lz_os" "$__lz_oi"
  __lz_emit 8 "$__lz_es" "$__lz_ei"
fi
echo LZEND
