# shellcheck shell=sh
# shellcheck disable=SC2154 # __lz_err, __lz_at, __lz_rest are set by path_errno.sh, prepended
# make_dir: mkdir -p PATH; on failure the exit status is the errno, worked
# out from the disk (path_errno.sh is prepended).
mkdir -p -- "$1" 2>/dev/null && exit 0
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
