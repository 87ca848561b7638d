#!/usr/bin/env python3
"""Turns one run of lizard-bench (Google Benchmark JSON), the JS SDK baseline and
the conformance suite's timing into the table scripts/bench prints: operation,
ours, baseline, ratio, target, verdict. Every ratio compares figures measured in
the same run.

  compare.py --gbench G.json [--js JS.json] [--suite SUITE.json] [--markdown OUT.md]
             [--notes NOTES.md] [--raw-json PATH] [--no-verdicts]
             [--load-start "1 5 15"] [--load-end "1 5 15"]
"""
import argparse
import datetime
import json
import os
import sys


def load(path):
    if not path or not os.path.exists(path):
        return None
    with open(path) as f:
        text = f.read().strip()
    return json.loads(text) if text else None


def index_gbench(data):
    rows = {}
    for b in data.get("benchmarks", []):
        if b.get("run_type") == "aggregate":
            continue
        name = b["name"]
        # Google Benchmark appends /iterations:N, /real_time and /threads:N.
        parts = [p for p in name.split("/") if not p.startswith(("iterations:", "real_time"))]
        rows["/".join(parts)] = b
    return rows


class Table:
    def __init__(self):
        self.rows = []

    def add(self, op, ours, base, ratio, target, verdict):
        self.rows.append((op, ours, base, ratio, target, verdict))

    def text(self):
        head = ("operation", "ours", "baseline", "ratio", "target", "verdict")
        rows = [head] + [tuple("" if c is None else str(c) for c in r) for r in self.rows]
        widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
        lines = []
        for n, r in enumerate(rows):
            lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
            if n == 0:
                lines.append("  ".join("-" * w for w in widths))
        return "\n".join(lines)

    def markdown(self):
        out = ["| operation | ours | baseline | ratio | target | verdict |", "|---|---|---|---|---|---|"]
        for r in self.rows:
            out.append("| " + " | ".join("" if c is None else str(c) for c in r) + " |")
        return "\n".join(out)


def verdict(ok, enforce=True):
    if ok is None:
        return "n/a"
    return ("PASS" if ok else "MISS") if enforce else ("ok" if ok else "(miss)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gbench", required=True)
    ap.add_argument("--js")
    ap.add_argument("--suite")
    ap.add_argument("--markdown")
    ap.add_argument("--notes", help="Markdown appended to --markdown (the analysis of the figures)")
    ap.add_argument("--raw-json", help="where the raw Google Benchmark JSON is kept (named in --markdown)")
    ap.add_argument("--no-verdicts", action="store_true")
    ap.add_argument("--load-start", help="the load averages (1, 5, 15 min) when the run began")
    ap.add_argument("--load-end", help="the load averages when it ended")
    args = ap.parse_args()
    enforce = not args.no_verdicts

    g = load(args.gbench)
    if g is None:
        print("compare: no benchmark output", file=sys.stderr)
        return 2
    rows = index_gbench(g)
    js = load(args.js) or {}
    suite = load(args.suite)
    t = Table()
    misses = 0

    def record(op, ours, base, ratio, target, ok):
        nonlocal misses
        v = verdict(ok, enforce)
        if ok is False:
            misses += 1
        t.add(op, ours, base, ratio, target, v)

    # 1. round trip (each benchmark measures its operations in alternation)
    def p(bench, key):
        r = rows.get(bench)
        return None if r is None else r.get(key)

    def us(v):
        return f"{v:.0f} us"

    run50, run99 = p("round_trip/run_true", "run_p50_us"), p("round_trip/run_true", "run_p99_us")
    shape4, shape2 = p("round_trip/run_true", "shape4_p50_us"), p("round_trip/run_true", "shape2_p50_us")
    shape5 = p("round_trip/run_true", "shape5_p50_us")
    raw50, raw99 = p("round_trip/run_true", "raw_p50_us"), p("round_trip/run_true", "raw_p99_us")
    if run50 and shape4:
        record("run(true) p50 vs the bare 4-program shape through a raw exec", us(run50), us(shape4),
               f"{run50 / shape4:.2f}x", "<= 1.25x", run50 / shape4 <= 1.25)
    mock_raw, spawn = p("round_trip/exec_vs_spawn", "raw_p50_us"), p("round_trip/exec_vs_spawn", "spawn_p50_us")
    if mock_raw and spawn:
        record("mock raw exec of true vs the posix_spawn floor", us(mock_raw), us(spawn),
               f"{mock_raw / spawn:.2f}x", "<= 3x", mock_raw / spawn <= 3)
    # What the shape needs before the helper does anything: a shell in front
    # (run_start.sh), which keeps the command's text out of every long-lived
    # argument list (docs/backend.md).
    if shape5 and shape4:
        record("the 5-program shape vs the bare 4-program shape", us(shape5), us(shape4),
               f"{shape5 / shape4:.2f}x", "(ratio)", None)
    if run50 and shape5:
        record("run(true) p50 vs the 5-program shape", us(run50), us(shape5),
               f"{run50 / shape5:.2f}x", "(ratio)", None)
    printing50 = p("round_trip/run_true", "printing_p50_us")
    if printing50 and run50:
        record("run printing a line on each stream p50 vs run(true) p50", us(printing50), us(run50),
               f"{printing50 / run50:.2f}x", "(ratio)", None)
    if run50 and raw50:
        record("run(true) p50 vs raw exec of true", us(run50), us(raw50), f"{run50 / raw50:.2f}x", "(ratio)", None)
    if run99 and raw99:
        record("run(true) p99 vs raw exec of true", us(run99), us(raw99), f"{run99 / raw99:.2f}x", "(ratio)", None)
    js_exec = js.get("exec_true")
    if run50 and js_exec:
        record("run(true) p50 vs JS SDK exec", us(run50), us(js_exec["median_us"]),
               f"{run50 / js_exec['median_us']:.2f}x", "(ratio)", None)
    for value, label in ((shape5, "raw exec of sh+setsid+sh+setsid+true (5 programs)"),
                         (shape4, "raw exec of setsid+sh+setsid+true (4 programs)"),
                         (shape2, "raw exec of sh + true (2 programs)")):
        if value and raw50:
            record(f"{label} vs raw exec of true", us(value), us(raw50), f"{value / raw50:.2f}x", "(floor)", None)

    # 1b. the backend protocol (docs/protocol.md): a call through an adapter
    # (lizard-workspace-serve --backend local, through AdapterClient) against the
    # same call on LocalWorkspaceBackend in process, in alternation; the target is
    # the time the protocol adds to the median.
    for bench, label in (("protocol/run_true", "run(true)"), ("protocol/read/1", "read 1 MiB")):
        remote, local = p(bench, "protocol_p50_us"), p(bench, "in_process_p50_us")
        if remote and local:
            added = remote - local
            record(f"protocol round trip vs in-process: {label}", us(remote), us(local),
                   f"{added:+.0f} us", "<= 1 ms added p50", added <= 1000)

    # 2. requests per operation: a small run and every file operation on UTF-8
    # content in one request; content that is not UTF-8 in at most two.
    exact = {"run_small", "read_bytes", "write_bytes", "stat", "list_dir", "exists", "make_dir", "remove",
             "realpath"}
    at_most = {"binary write": 2, "run_5MiB": 3}
    for name, r in rows.items():
        if not name.startswith("requests/"):
            continue
        op = name.split("/", 1)[1]
        n = r.get("requests")
        if n is None:
            continue
        if op in exact:
            record(f"requests: {op}", f"{n:.0f}", "", "", "= 1", n == 1)
        elif op in at_most:
            record(f"requests: {op}", f"{n:.0f}", "", "", f"<= {at_most[op]}", n <= at_most[op])
        else:
            record(f"requests: {op}", f"{n:.0f}", "", "", "(count)", None)

    # 3. file transfer: ours and raw libcurl in alternation; peak memory apart
    def mibps(name):
        r = rows.get(name)
        return None if r is None or "bytes_per_second" not in r else r["bytes_per_second"] / 2**20

    sizes = sorted({int(n.split("/")[2]) for n in rows if n.startswith(("files/read/", "files/write/"))})
    # write_text: UTF-8 text, which goes as a JSON string in one request (the
    # other rows write bytes that are not UTF-8); no JS SDK row for it.
    for kind in ("read", "write", "write_text"):
        for size in sizes:
            r = rows.get(f"files/{kind}/{size}") or {}
            ours, raw = r.get("ours_mib_s"), r.get("raw_mib_s")
            label = f"write {size} MiB of UTF-8 text" if kind == "write_text" else f"{kind} {size} MiB"
            big = size == 64
            if ours and raw:
                record(f"{label} vs raw libcurl", f"{ours:.0f} MiB/s", f"{raw:.0f} MiB/s", f"{ours / raw:.2f}x",
                       ">= 0.9x" if big else "", (ours / raw >= 0.9) if big else None)
            jskey = f"{kind}_{size}MiB"
            if ours and jskey in js:
                jsr = js[jskey]["mib_per_s"]
                record(f"{label} vs JS SDK", f"{ours:.0f} MiB/s", f"{jsr:.0f} MiB/s", f"{ours / jsr:.2f}x",
                       ">= 1.3x" if big else "", (ours / jsr >= 1.3) if big else None)
            growth = (rows.get(f"files/{kind}_memory/{size}") or {}).get("rss_growth_x")
            if growth is not None:
                limit = 1.5 if big else 3
                record(f"{label}: peak RSS growth / file size", f"{growth:.2f}x", "", "", f"<= {limit}x",
                       growth <= limit)

    # 4. output capture
    for size in ("1", "10"):
        ours, raw = mibps(f"output/ours_run/{size}"), mibps(f"output/raw_files_read/{size}")
        if ours and raw:
            record(f"run printing {size} MiB vs one raw read", f"{ours:.0f} MiB/s", f"{raw:.0f} MiB/s",
                   f"{ours / raw:.2f}x", "(ratio)", None)

    # 5. concurrency
    conc = {}
    for name, r in rows.items():
        if name.startswith("concurrency/run_true/threads:"):
            conc[int(name.rsplit(":", 1)[1])] = r
    for n in sorted(conc):
        r = conc[n]
        errors = r.get("errors", 0)
        ips = r.get("items_per_second", 0)
        record(f"{n} concurrent runs", f"{ips:.0f}/s p50 {r.get('p50_us', 0):.0f} us p99 {r.get('p99_us', 0):.0f} us",
               "", "", "0 errors", errors == 0)
    if 1 in conc and 4 in conc and conc[1].get("items_per_second"):
        ratio = conc[4]["items_per_second"] / conc[1]["items_per_second"]
        record("throughput 4 threads vs 1", f"{conc[4]['items_per_second']:.0f}/s",
               f"{conc[1]['items_per_second']:.0f}/s", f"{ratio:.2f}x", ">= 1.5x", ratio >= 1.5)

    # 6. suite time
    if suite:
        total = suite.get("wall_seconds")
        waits = suite.get("unavoidable_wait_seconds")
        if total is not None and waits is not None:
            jobs = suite.get("jobs") or 1
            rules_sum = suite.get("rule_seconds_sum")
            # At --jobs 1 wall time is the rules' times in a row; at --jobs N
            # the rules' own times are summed instead (they overlap in wall time).
            if jobs == 1 or rules_sum is None:
                spent, basis = total, "wall"
            else:
                spent, basis = rules_sum, "sum of rule times"
            s = suite.get("summary") or {}
            record("conformance suite: overhead beyond waits", f"{spent - waits:.1f} s",
                   f"waits {waits:.1f} s, {basis} {spent:.1f} s, --jobs {jobs}"
                   + (f", {s.get('pass')} pass {s.get('fail')} fail {s.get('skip')} skip" if s else ""),
                   "", "<= 30 s", spent - waits <= 30)
        elif total is not None:
            record("conformance suite wall time", f"{total:.1f} s", "", "", "< 60 s", total < 60)
        four = suite.get("jobs4") or {}
        if four.get("wall_seconds") is not None:
            s4 = four.get("summary") or {}
            wall4 = four["wall_seconds"]
            record("conformance suite wall at --jobs 4", f"{wall4:.1f} s",
                   f"rule times {four.get('rule_seconds_sum') or 0:.1f} s, waits "
                   f"{four.get('unavoidable_wait_seconds') or 0:.1f} s"
                   + (f", {s4.get('pass')} pass {s4.get('fail')} fail {s4.get('skip')} skip" if s4 else ""),
                   "", "<= 12 s", wall4 <= 12 and not s4.get("fail"))

    # 7. the mock
    for name in sorted(rows):
        if name.startswith("mock/"):
            r = rows[name]
            record(name.replace("mock/", "mock: "), f"{r.get('items_per_second', 0):.0f} req/s", "", "", "(rate)", None)
    # A sandbox's start in an embedded mock whose process holds 512 MiB and
    # writes it again after each start, against one that holds nothing: a
    # clone that copied the process's memory made every page fault again.
    held, bare = rows.get("embedded/sandbox_start/512"), rows.get("embedded/sandbox_start/0")
    if held and bare and bare.get("real_time"):
        ms = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}.get(bare.get("time_unit", "ns"), 1e-6)
        record("sandbox start and a rewrite of 512 MiB held, embedded mock, vs holding none",
               f"{held['real_time'] * ms:.1f} ms", f"{bare['real_time'] * ms:.1f} ms",
               f"{held['real_time'] / bare['real_time']:.2f}x", "(ratio)", None)
        record("sandbox start p50, embedded mock holding 512 MiB vs holding none",
               f"{held['p50_us'] / 1000:.1f} ms", f"{bare['p50_us'] / 1000:.1f} ms",
               f"{held['p50_us'] / bare['p50_us']:.2f}x", "(ratio)", None)

    ctx = g.get("context", {})
    load_start = args.load_start or " ".join(f"{v:.2f}" for v in ctx.get("load_avg", []))
    load_line = (f"load average (1, 5, 15 min) {load_start or '?'} at the start, {args.load_end or '?'} at the end,"
                 f" on {os.cpu_count()} CPUs")
    print(t.text())
    print(load_line)
    one_min = [float(x.split()[0]) for x in (load_start, args.load_end) if x]
    if one_min and max(one_min) > (os.cpu_count() or 1):
        print("note: the load was above the CPU count: the ratios were measured under contention")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("# Performance\n\n")
            # The day of the measurement (Google Benchmark's context), not of this rendering.
            measured = str(ctx.get("date", ""))[:10] or datetime.date.today().isoformat()
            f.write("Generated by `scripts/bench` on " + measured +
                    f", {load_line}; lizard-bench built"
                    f" Release (the Google Benchmark library itself reports"
                    f" {ctx.get('library_build_type', '?')}).\n")
            f.write("Every ratio compares figures measured in the same run, against one mock "
                    "(lizard::mock::MockServer in a child process of lizard-bench; the two"
                    " \"sandbox start\" rows embed one in lizard-bench itself).\n")
            if args.raw_json:
                f.write(f"Raw Google Benchmark JSON: `{os.path.relpath(args.raw_json)}` (not committed).\n")
            f.write("\n" + t.markdown() + "\n")
            if args.notes and os.path.exists(args.notes):
                with open(args.notes) as n:
                    f.write("\n" + n.read())
    return 1 if (enforce and misses) else 0


if __name__ == "__main__":
    sys.exit(main())
