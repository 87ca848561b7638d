# shellcheck shell=sh
# shellcheck disable=SC2154 # __lz_err and __lz_at are set by path_errno.sh, prepended
# write_bytes of content that is not UTF-8: $1 a staged file holding its
# base64 (written through the files API, which takes UTF-8 text only in the
# kubernetes era), $2 the target. Decodes next to the target and renames it
# into place, so a failure leaves the old content whole; the target's mode
# is kept; a link is written through. Prints "LZW ERRNO" (0 on success),
# the errno worked out from the disk (path_errno.sh is prepended).
__lz_b=$1
__lz_t=$2
__lz_tmp=
# Done: the staged file and the temporary one go, and so do the marks of
# earlier writes; a success leaves its own mark, RUN.w64.ok.
__lz_done() {
  rm -f -- "$__lz_b" ${__lz_tmp:+"$__lz_tmp"} "${__lz_b%/*}"/*.w64.ok
  [ "$1" = 0 ] && : >"$__lz_b.ok" 2>/dev/null
  echo "LZW $1"
  exit 0
}
# The same exec again after it was done: libcurl re-sends a request whose
# kept-alive connection died before the answer came. The staged file is
# gone and the mark is there: done, not EIO.
if [ ! -e "$__lz_b" ] && [ -e "$__lz_b.ok" ]; then
  echo "LZW 0"
  exit 0
fi
__lz_r=$(realpath -m -- "$__lz_t" 2>/dev/null && printf x)
case $__lz_r in
  *x) __lz_r=${__lz_r%?x} ;;
  *)
    __lz_walk "$__lz_t"
    [ "$__lz_err" = 0 ] && __lz_err=5  # nothing on disk explains it: EIO, never success
    __lz_done "$__lz_err"
    ;;
esac
__lz_d=${__lz_r%/*}
[ -n "$__lz_d" ] || __lz_d=/
if ! mkdir -p -- "$__lz_d" 2>/dev/null; then
  __lz_walk "$__lz_d"
  [ "$__lz_err" = 0 ] && __lz_err=13
  __lz_done "$__lz_err"
fi
[ -d "$__lz_r" ] && __lz_done 21
[ -w "$__lz_d" ] || __lz_done 13
__lz_tmp=$__lz_d/.lizard-write-$$
base64 -d <"$__lz_b" >"$__lz_tmp" 2>/dev/null || __lz_done 5
if [ -e "$__lz_r" ]; then
  [ -w "$__lz_r" ] || __lz_done 13
  chmod --reference="$__lz_r" -- "$__lz_tmp" 2>/dev/null
fi
mv -f -- "$__lz_tmp" "$__lz_r" 2>/dev/null || __lz_done 13
__lz_tmp=
__lz_done 0
