# shellcheck shell=sh
# Why a path cannot be used, as an errno number worked out from what is on
# disk (never from an error message, whose text may hold the path). Both
# set __lz_err:
#   __lz_link_errno LINK  a link that does not resolve: 40 (ELOOP) when it
#                         loops, 2 (ENOENT) when it dangles
#   __lz_walk PATH        0 when every component of PATH is a reachable
#                         directory; else the errno of the first that is not:
#                         2 missing, 20 a non-directory (ENOTDIR), 40 a link
#                         loop, 13 a directory that cannot be searched
#                         (EACCES); __lz_at is then that component.
__lz_link_errno() {
  __lz_l=$1
  __lz_h=0
  while [ -L "$__lz_l" ] && [ "$__lz_h" -lt 40 ]; do
    __lz_t=$(readlink -- "$__lz_l"; printf x)
    __lz_t=${__lz_t%?x}
    case $__lz_t in
      /*) __lz_l=$__lz_t ;;
      *) __lz_l=${__lz_l%/*}/$__lz_t ;;
    esac
    __lz_h=$((__lz_h + 1))
  done
  if [ "$__lz_h" -ge 40 ]; then __lz_err=40; else __lz_err=2; fi
}

__lz_walk() {
  __lz_at=
  __lz_err=0
  __lz_rest=${1#/}
  while [ -n "$__lz_rest" ]; do
    __lz_c=${__lz_rest%%/*}
    case $__lz_rest in
      */*) __lz_rest=${__lz_rest#*/} ;;
      *) __lz_rest= ;;
    esac
    [ -n "$__lz_c" ] || continue
    __lz_at=$__lz_at/$__lz_c
    if [ -d "$__lz_at" ]; then
      [ -x "$__lz_at" ] || { __lz_err=13; return; }
    elif [ -L "$__lz_at" ]; then
      __lz_link_errno "$__lz_at"
      return
    elif [ -e "$__lz_at" ]; then
      __lz_err=20
      return
    else
      __lz_err=2
      return
    fi
  done
}
