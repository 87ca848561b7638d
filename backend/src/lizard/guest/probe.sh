# shellcheck shell=sh
# shellcheck disable=SC2154 # __lz_err and __lz_at are set by path_errno.sh, prepended
# Resolves links for stat and list_dir: for each PATH, one line: "d" (a
# directory), "f SIZE" (a file), "l" (a link loop) or "n" (a dangling link)
# (path_errno.sh is prepended).
for __lz_p do
  if [ -d "$__lz_p" ]; then
    echo d
  elif [ -e "$__lz_p" ]; then
    echo "f $(stat -L -c %s -- "$__lz_p")"
  else
    __lz_link_errno "$__lz_p"
    if [ "$__lz_err" = 40 ]; then echo l; else echo n; fi
  fi
done
