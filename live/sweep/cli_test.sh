#!/usr/bin/env bash
# lizard-sweep's command line (ctest `sweep.cli`): minutes that are not a
# number from 0 to ten years, and an empty --run (which would mean every
# run), are a usage error (exit 2) that says so, before any request; --help
# works.
#   cli_test.sh path/to/lizard-sweep
set -uo pipefail
sweep=${1:?lizard-sweep}
failures=0
for bad in -1 abc 15m '' 5256001 99999999999999999999; do
  out=$(LIZARD_API_KEY=k LIZARD_PROJECT_ID=p LIZARD_API_URL=http://127.0.0.1:9 \
    "$sweep" --older-than "$bad" 2>&1)
  status=$?
  if [[ $status -ne 2 ]]; then echo "FAIL: --older-than '$bad': exit $status"; failures=$((failures + 1)); fi
  want="lizard-sweep: --older-than needs minutes from 0 to 5256000 (ten years), not '$bad'"
  if [[ "$(head -n1 <<<"$out")" != "$want" ]]; then
    echo "FAIL: --older-than '$bad' said: $(head -n1 <<<"$out")"; failures=$((failures + 1))
  fi
done
out=$(LIZARD_API_KEY=k LIZARD_PROJECT_ID=p LIZARD_API_URL=http://127.0.0.1:9 "$sweep" --run '' 2>&1)
status=$?
if [[ $status -ne 2 || "$(head -n1 <<<"$out")" != "lizard-sweep: --run needs a run ID (lc-...), not ''" ]]; then
  echo "FAIL: --run '': exit $status, said: $(head -n1 <<<"$out")"; failures=$((failures + 1))
fi
"$sweep" --help | grep -q -- "--older-than" || { echo "FAIL: --help"; failures=$((failures + 1)); }
echo "sweep cli_test: $failures failures"
((failures == 0))
