# shellcheck shell=sh
# shellcheck disable=SC2154 # __lz_err, __lz_at, __lz_rest are set by path_errno.sh, prepended
# make_dir: mkdir -p PATH; on failure the exit status is the errno. What the
# disk shows (path_errno.sh is prepended) decides a missing, non-directory
# or looping component. What it cannot show (a read-only file system, a full
# disk, a name too long, a parent not writable) comes from the end of
# mkdir's own message in the C locale: the text after its last ": ", which
# is strerror's and never part of the path (mkdir quotes the path before it),
# matched whole against a fixed list. A name that reads like an error
# changes nothing.
mkdir -p -- "$1" 2>/dev/null && exit 0
__lz_m=$(LC_ALL=C mkdir -p -- "$1" 2>&1 >/dev/null) && exit 0
case ${__lz_m##*: } in
  'Read-only file system') exit 30 ;;
  'No space left on device') exit 28 ;;
  'Disk quota exceeded') exit 122 ;;
  'File name too long') exit 36 ;;
  'Too many links') exit 31 ;;
  'Permission denied') exit 13 ;;
  'Input/output error') exit 5 ;;
esac
__lz_walk "$1"
# The failing component is the path's last when nothing but slashes follows
# it (PATH may end in "/" or hold "//").
__lz_last=1
case $__lz_rest in *[!/]*) __lz_last=0 ;; esac
case $__lz_err in
  0) exit 13 ;;  # every component a directory, the last not made: not writable
  20) [ "$__lz_last" = 1 ] && exit 17; exit 20 ;;  # the path itself a file: EEXIST
  2) [ -L "$__lz_at" ] && [ "$__lz_last" = 1 ] && exit 17; exit 2 ;;
  *) exit "$__lz_err" ;;
esac
