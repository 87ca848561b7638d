#!/usr/bin/env bash
# lizard-conformance's command line (ctest `conformance.cli`), on the local
# backend: every old option spelling still works; usage errors (an option
# where a value belongs, runner options with --gtest, two outputs on one
# file), unwritable outputs and stale expectations exit 2 before any rule; a
# report that cannot be written whole is exit 2; a killed run leaves no
# earlier report at its paths; expectations decide
# the exit status; shards run from the options or GTEST_* variables merge
# back into the whole selection; merge refuses overlaps; --compare.
#   cli_test.sh path/to/lizard-conformance WORKDIR
set -euo pipefail
runner=${1:?runner}; work=${2:?work directory}
rm -rf "$work"; mkdir -p "$work"; cd "$work"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# expect STATUS NAME -- COMMAND...: runs it (output in NAME.out), checks its exit status.
expect() {
  local want=$1 name=$2; shift 3
  local got=0
  "$@" >"$name.out" 2>&1 || got=$?
  [[ $got -eq $want ]] || { fail "$name: exit $got, expected $want"; sed 's/^/  /' "$name.out" | tail -5; }
}
contains() { grep -qF -- "$2" "$1.out" || fail "$1: no '$2' in its output"; }
ids() { grep -o '"id": "[^"]*"' "$1" | sort; }
filter='env.*:cmd.result-fields:cmd.stdin-at-eof:lizard.one-create'

# 1. The old spellings.
expect 0 spellings -- "$runner" --backend local --filter "$filter" -j 2 --rule-timeout 60 \
  --report-md r.md --report-json r.json --junit r.xml
for f in r.md r.json r.xml; do [[ -s $f ]] || fail "spellings: $f not written"; done
expect 0 equals-form -- "$runner" --backend=local --filter=cmd.result-fields --jobs=1
expect 0 list -- "$runner" --list-rules
[[ $(wc -l <list.out) -ge 70 ]] || fail "list: $(wc -l <list.out) rules"
expect 0 help -- "$runner" --help
contains help "merge"
contains help "--expectations"
expect 0 merge-help -- "$runner" merge --help
contains merge-help "shards' JSON reports"

# 2. Usage errors: exit 2, nothing run.
expect 2 unknown -- "$runner" --backend local --no-such-option
expect 2 jobs0 -- "$runner" --backend local --jobs 0
expect 2 backend -- "$runner" --backend nope
expect 2 index-alone -- "$runner" --backend local --shard-index 1
expect 2 index-past -- "$runner" --backend local --shard-index 2 --shard-count 2
contains index-past "not below --shard-count 2"
expect 2 budget-offline -- "$runner" --backend local --max-sandboxes 3
contains budget-offline "apply to --live"
expect 2 live-local -- "$runner" --backend local --live
expect 2 era-local -- "$runner" --backend local --era firecracker
expect 2 no-program -- "$runner" --backend command --
for bad in 0 -5 inf nan 1e300 20s ''; do
  expect 2 "deadline-${bad:-empty}" -- "$runner" --backend command --answer-deadline "$bad" -- true
  contains "deadline-${bad:-empty}" "is not a number of seconds from 0.001 to 86400 (a day)"
  expect 2 "start-${bad:-empty}" -- "$runner" --backend command --start-deadline "$bad" -- true
  contains "start-${bad:-empty}" "is not a number of seconds from 0.001 to 86400 (a day)"
done
expect 2 budget-inf -- "$runner" --backend lizard --live --max-sandbox-seconds inf
contains budget-inf "is not a number of seconds from 1 to 1e9"
expect 2 no-match -- "$runner" --backend local --filter 'nothing.*'
# One mistyped pattern beside good ones, included or excluded.
expect 2 one-no-match -- "$runner" --backend local --filter 'env.ref-stable:cmd.no-such-rule'
contains one-no-match "--filter pattern 'cmd.no-such-rule' matches no rule"
expect 2 exclusion-no-match -- "$runner" --backend local --filter 'env.*:-fs.nothing*'
contains exclusion-no-match "--filter pattern '-fs.nothing*' matches no rule"
# An option's value that is another option (an empty variable before it).
expect 2 swallowed-filter -- "$runner" --backend local --filter --list-rules
contains swallowed-filter "needs a value, not the option --list-rules"
expect 2 swallowed-report -- "$runner" --backend local --report-json --junit x.xml
[[ -e ./--junit || -e x.xml ]] && fail "swallowed-report: a file was written"
# What only the runner does, given with --gtest, would be left undone silently.
for only in "--filter env.*" "--report-json g.json" "--junit g.xml" "--expectations /dev/null" "--jobs 2"; do
  # shellcheck disable=SC2086 # the option and its value, split
  expect 2 "gtest${only%% *}" -- "$runner" --backend local $only --gtest --gtest_filter=Conformance.EnvRefStable
  contains "gtest${only%% *}" "${only%% *} does not apply with --gtest"
done
# Two outputs on one file.
expect 2 same-file -- "$runner" --backend local --filter "$filter" --report-json same.out --junit ./same.out
contains same-file "--report-json and --junit name one file"

# 3. Output paths are checked before any rule.
expect 2 unwritable -- "$runner" --backend local --filter "$filter" --report-json /nonexistent-lc/r.json
contains unwritable "cannot write --report-json /nonexistent-lc/r.json"
grep -q '^\[' unwritable.out && fail "unwritable: a rule ran"

# A report that cannot be written whole: exit 2 with the reason, and nothing
# half written under the name (here a full device is the only "file" left).
expect 2 full -- "$runner" --backend local --filter cmd.result-fields --report-json /dev/full
contains full "cannot write /dev/full: No space left on device"
# A run that cannot finish leaves no earlier report behind at its paths.
echo '{"stale": true}' >stale-report.json
expect 137 killed -- timeout -s KILL 4 "$runner" --backend local --filter 'cmd.*' --jobs 1 \
  --report-json stale-report.json
[[ -e stale-report.json ]] && fail "killed: an earlier run's report is still there"

# 4. Expectations.
printf 'cmd.result-fields FAIL fine\ncmd.gone-rule FAIL renamed\n' >stale.txt
expect 2 stale -- "$runner" --backend local --filter "$filter" --expectations stale.txt
contains stale "stale.txt:2: stale entry: 'cmd.gone-rule' names no rule"
grep -q '^\[' stale.out && fail "stale: a rule ran"
expect 0 bootstrap -- "$runner" --backend local --filter "$filter" --write-expectations boot.txt
grep -q '^lizard.one-create  SKIP  ' boot.txt || fail "bootstrap: no SKIP entry"; cat boot.txt
expect 0 matched -- "$runner" --backend local --filter "$filter" --expectations boot.txt --junit m.xml
contains matched "as expected, 0 UNEXPECTED FAIL, 0 UNEXPECTED PASS, 0 UNEXPECTED SKIP"
{ cat boot.txt; echo 'cmd.stdin-at-eof FAIL believed broken https://tracker.example/7'; } >wrong.txt
expect 1 unexpected -- "$runner" --backend local --filter "$filter" --expectations wrong.txt \
  --junit u.xml --report-md u.md --report-json u.json
contains unexpected "UNEXPECTED PASS"
grep -q 'UNEXPECTED PASS: expected FAIL: believed broken' u.xml || fail "unexpected: JUnit"
grep -q '\*\*UNEXPECTED PASS\*\*' u.md || fail "unexpected: Markdown"
grep -q '"verdict": "UNEXPECTED PASS"' u.json || fail "unexpected: JSON"
expect 1 no-expectations-skip -- "$runner" --backend local --filter "$filter" --expectations /dev/null
contains no-expectations-skip "UNEXPECTED SKIP"

# 5. Shards, from options and from GoogleTest's variables, merged back.
expect 0 shard0 -- "$runner" --backend local --filter "$filter" --shard-index 0 --shard-count 3 --report-json s0.json
expect 0 shard1 -- env GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=1 GTEST_SHARD_STATUS_FILE="$work/status" \
  "$runner" --backend local --filter "$filter" --report-json s1.json
[[ -e status ]] || fail "shard1: GTEST_SHARD_STATUS_FILE not touched"
expect 0 shard2 -- "$runner" --backend local --filter "$filter" --shard-index 2 --shard-count 3 --report-json s2.json
for s in 0 1 2; do grep -q "\"shard\": {\"index\": $s, \"count\": 3}" "s$s.json" || fail "s$s.json: no shard"; done
cat s0.json s1.json s2.json | grep -o '"id": "[^"]*"' | sort >union.txt
[[ $(sort -u union.txt | wc -l) -eq $(wc -l <union.txt) ]] || fail "shards overlap"
ids r.json >whole.txt
diff -u whole.txt union.txt || fail "the shards' union is not the whole selection"
expect 0 merge -- "$runner" merge s2.json s0.json s1.json --report-json merged.json --report-md merged.md \
  --junit merged.xml --compare r.json
ids merged.json | diff -u whole.txt - || fail "merge: not the whole selection"
contains merge "merged from shards 0, 1, 2"
contains merge "0 regressed, 0 fixed"
expect 2 overlap -- "$runner" merge s0.json s0.json s1.json s2.json
contains overlap "overlapping shards"
expect 2 missing -- "$runner" merge s0.json s2.json
contains missing "shard 1 of 3 is missing"
sed 's/"status": "PASS"/"status": "FAIL"/' r.json >old.json
expect 0 compare -- "$runner" --backend local --filter "$filter" --compare old.json
contains compare "fixed cmd.result-fields: FAIL -> PASS"

echo "cli_test: $failures failures"
[[ $failures -eq 0 ]]
