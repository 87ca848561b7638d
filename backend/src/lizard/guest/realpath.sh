# shellcheck shell=sh
# shellcheck disable=SC2154 # __lz_err and __lz_at are set by path_errno.sh, prepended
# realpath: prints the resolved PATH (realpath -m: missing components kept
# as written). On failure the exit status is the errno (40 for a link loop),
# worked out from the disk (path_errno.sh is prepended).
__lz_o=$(realpath -m -- "$1" 2>/dev/null && printf x)
case $__lz_o in *x) printf '%s' "${__lz_o%x}"; exit 0 ;; esac
__lz_walk "$1"
[ "$__lz_err" = 0 ] && exit 1
exit "$__lz_err"
