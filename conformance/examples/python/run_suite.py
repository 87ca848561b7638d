#!/usr/bin/env python3
"""Runs the conformance suite on this example and keeps README.md true.

    run_suite.py LIZARD_CONFORMANCE [--update-readme]

Runs `LIZARD_CONFORMANCE --backend command --check-protocol -- python3
adapter.py` (every message checked against the protocol's schemas), prints
the runner's output, and then:

- fails (exit 1) when a rule FAILs: this backend must pass every rule a
  local backend can pass;
- with --update-readme, writes the verdicts into README.md between the
  report markers; without it, fails when README.md records other verdicts
  than this run got (the report there must be the real one).
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
README = os.path.join(HERE, "README.md")
BEGIN = "<!-- report:begin (run_suite.py --update-readme writes this table) -->"
END = "<!-- report:end -->"


def table(report):
    summary = report["summary"]
    lines = [
        "%d pass, %d fail, %d skip (suite %s)." % (
            summary["pass"], summary["fail"], summary["skip"], report["suite_version"]),
        "",
        "| rule | result | reason |",
        "|---|---|---|",
    ]
    for rule in report["rules"]:
        reason = rule["reason"].replace("|", "\\|")
        lines.append("| `%s` | %s | %s |" % (rule["id"], rule["status"], reason))
    return "\n".join(lines)


def recorded_verdicts(text):
    verdicts = {}
    inside = False
    for line in text.splitlines():
        if line.startswith(BEGIN):
            inside = True
        elif line.startswith(END):
            inside = False
        elif inside and line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            verdicts[cells[0].strip("`")] = cells[1]
    return verdicts


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    runner = sys.argv[1]
    update = "--update-readme" in sys.argv[2:]
    with tempfile.TemporaryDirectory() as tmp:
        report_path = os.path.join(tmp, "report.json")
        command = [runner, "--backend", "command", "--check-protocol", "--jobs", "4",
                   "--report-json", report_path, "--", sys.executable,
                   os.path.join(HERE, "adapter.py")]
        status = subprocess.call(command)
        if status not in (0, 1):
            sys.exit("the runner could not run the suite (exit %d)" % status)
        with open(report_path) as f:
            report = json.load(f)
    failed = [r["id"] for r in report["rules"] if r["status"] == "FAIL"]
    with open(README) as f:
        readme = f.read()
    if update:
        start = readme.index(BEGIN)
        end = readme.index(END)
        readme = readme[:start] + BEGIN + "\n\n" + table(report) + "\n\n" + readme[end:]
        with open(README, "w") as f:
            f.write(readme)
        print("README.md updated")
    else:
        recorded = recorded_verdicts(readme)
        got = {r["id"]: r["status"] for r in report["rules"]}
        # README.md records a run as root, where fs.permission-denied SKIPs
        # (chmod 000 does not keep root out); as another user it runs.
        if os.geteuid() != 0 and got.get("fs.permission-denied") == "PASS":
            got["fs.permission-denied"] = recorded.get("fs.permission-denied")
        if recorded != got:
            changed = sorted(k for k in set(recorded) | set(got) if recorded.get(k) != got.get(k))
            for rule in changed:
                print("README.md records %s: %s, this run: %s" % (
                    rule, recorded.get(rule, "nothing"), got.get(rule, "nothing")))
            sys.exit("README.md's report is not this run's; rerun with --update-readme")
    if failed:
        sys.exit("rules FAILed: " + ", ".join(failed))


if __name__ == "__main__":
    main()
