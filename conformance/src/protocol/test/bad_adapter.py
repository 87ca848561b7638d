#!/usr/bin/env python3
"""A deliberately broken adapter of the backend protocol, for protocol_test.

    bad_adapter.py MODE

It answers initialize like a real adapter (commands and a filesystem) and then
breaks the protocol the way MODE says, at the first backend/new (or run):

  crash         prints a line to stderr and exits with status 3
  hang          stops reading and answering (pings too), sleeps forever
  garbage       writes a line that is not JSON
  oversized     writes one 100 MiB line
  wrong-id      answers backend/new with an id no request has
  exit-mid-run  exits (status 0) with the first request after backend/new in flight
  version       answers initialize with protocol version 2
  slow-line     answers backend/new with an error, its line written in pieces
                over 4 s (no $/ping answered meanwhile: it is in that line)
  deaf          answers backend/new, then reads nothing more (pings neither)
  slow-reader   reads its input 256 KiB at most every 0.5 s (and answers
                backend/new, pings, and every other request with an error)
  slow-start    reads nothing for 3 s after it starts, then behaves (answers
                initialize and pings; backend/new is "not in this adapter")
  deep          answers backend/new with a result nested 300,000 levels deep
  empty-stderr  writes 24 million empty lines to stderr (BAD_ADAPTER_EMPTY_LINES_M
                millions, if set), then crashes (status 3)
  fewer-caps    offers no capabilities when initialize names a rule (the
                runner's own probe names none), then answers like "crash"
  log-secret    at backend/new, logs a 70,000-character line ending in
                $BAD_ADAPTER_SECRET, then answers it with an error
  noisy-child   at backend/new, leaves a child in a session of its own that
                writes blank lines to the adapter's stdout and stderr every
                10 ms for 20 s, then exits with status 3
  starved       at backend/new, computes for BAD_ADAPTER_SILENCE seconds (5)
                at the lowest priority on one CPU that a busy child of its own
                holds (so it waits for that CPU nearly all the time), answering
                nothing meanwhile; then answers backend/new with an error
  spin          at backend/new, computes forever, answering nothing (pings
                neither): hung, though never asleep
  spin-threads  at backend/new, stops reading and computes forever on two
                threads more than it has CPUs (hashing, which runs without
                the interpreter lock): its threads wait for CPUs each other
                hold, and it is hung all the same
"""
import json
import os
import signal
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "crash"


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request, result):
    send({"jsonrpc": "2.0", "id": request["id"], "result": result})


def answer_error(request, message):
    send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": message}})


def log(text):
    sys.stderr.write("bad_adapter: " + text + "\n")
    sys.stderr.flush()


def break_protocol(request):
    if MODE == "crash":
        log("crashing on purpose")
        os._exit(3)
    if MODE == "hang":
        log("hanging on purpose")
        while True:
            time.sleep(3600)
    if MODE == "garbage":
        log("writing garbage on purpose")
        sys.stdout.write("this is not JSON\n")
        sys.stdout.flush()
        return
    if MODE == "oversized":
        log("writing a 100 MiB line on purpose")
        chunk = "x" * (1 << 20)
        try:
            for _ in range(100):
                sys.stdout.write(chunk)
            sys.stdout.write("\n")
            sys.stdout.flush()
        except BrokenPipeError:
            os._exit(1)
        return
    if MODE == "slow-line":
        log("writing an answer slowly on purpose")
        line = json.dumps({"jsonrpc": "2.0", "id": request["id"],
                           "error": {"code": -32601,
                                     "message": "a slow line " + "." * 100}}) + "\n"
        for i in range(0, len(line), 10):
            sys.stdout.write(line[i:i + 10])
            sys.stdout.flush()
            time.sleep(0.2)
        return
    if MODE == "deep":
        log("answering a deeply nested result on purpose")
        depth = 300000
        sys.stdout.write('{"jsonrpc":"2.0","id":%d,"result":' % request["id"] +
                         "[" * depth + "]" * depth + "}\n")
        sys.stdout.flush()
        return
    if MODE == "empty-stderr":
        for _ in range(int(os.environ.get("BAD_ADAPTER_EMPTY_LINES_M", "24"))):
            sys.stderr.write("\n" * 1000000)
        sys.stderr.flush()
        log("crashing on purpose after the empty lines")
        os._exit(3)
    if MODE == "noisy-child":
        log("leaving a noisy child, then crashing on purpose")
        import subprocess
        subprocess.Popen([sys.executable, "-c",
                          "import sys, time\n"
                          "end = time.time() + 20\n"
                          "while time.time() < end:\n"
                          "    sys.stdout.write('  \\n'); sys.stdout.flush()\n"
                          "    sys.stderr.write('\\n'); sys.stderr.flush()\n"
                          "    time.sleep(0.01)\n"],
                         start_new_session=True)
        os._exit(3)
    if MODE == "starved":
        log("computing at the lowest priority behind a busy child on purpose")
        cpu = min(os.sched_getaffinity(0))
        try:
            os.sched_setaffinity(0, {cpu})
        except OSError as e:  # a sandbox that forbids it: the test skips
            answer_error(request, "cannot pin to a CPU here: %s" % e)
            return
        busy = os.fork()
        if busy == 0:
            while True:
                pass
        os.nice(19)
        end = time.monotonic() + float(os.environ.get("BAD_ADAPTER_SILENCE", "5"))
        while time.monotonic() < end:
            pass
        os.kill(busy, signal.SIGKILL)
        os.waitpid(busy, 0)
        answer_error(request, "starved on purpose, not hung")
        return
    if MODE == "spin":
        log("computing forever on purpose")
        while True:
            pass
    if MODE == "spin-threads":
        log("computing forever on more threads than CPUs on purpose")
        import hashlib
        import threading

        def hash_forever():
            data = bytes(1 << 20)
            while True:
                hashlib.sha256(data).digest()
        for _ in range(len(os.sched_getaffinity(0)) + 2):
            threading.Thread(target=hash_forever, daemon=True).start()
        while True:
            time.sleep(3600)
    if MODE == "fewer-caps":
        log("crashing on purpose")
        os._exit(3)
    if MODE == "wrong-id":
        log("answering a wrong id on purpose")
        send({"jsonrpc": "2.0", "id": request["id"] + 1000, "result": None})
        return


def respond(request):
    """One request; False when the adapter stops reading its input."""
    method = request.get("method")
    if "id" not in request:
        return True
    if method == "initialize":
        named_rule = bool((request.get("params") or {}).get("rule"))
        answer(request, {
            "protocol_version": "2" if MODE == "version" else "1",
            "name": "bad adapter (" + MODE + ")",
            "capabilities": [] if MODE == "fewer-caps" and named_rule
            else ["commands", "filesystem"],
        })
    elif method == "$/ping":
        answer(request, None)
    elif method == "backend/new" and MODE in ("exit-mid-run", "deaf", "slow-reader"):
        answer(request, {"backend": 1, "working_dir": "/tmp"})
        if MODE == "deaf":
            log("reading nothing more on purpose")
            return False
    elif method == "backend/new" and MODE == "log-secret":
        sys.stderr.write("debug " + "x" * 70000 + " key " +
                         os.environ.get("BAD_ADAPTER_SECRET", "") + "\n")
        sys.stderr.flush()
        answer_error(request, "not in this adapter (backend/new)")
    elif method == "backend/new" and MODE != "slow-start":
        break_protocol(request)
    elif MODE == "exit-mid-run":
        log("leaving in the middle of " + method)
        os._exit(0)
    else:
        answer_error(request, "not in this adapter (" + method + ")")
    return True


def read_slowly():
    """256 KiB of input at most every 0.5 s, the lines split here."""
    log("reading slowly on purpose")
    pending = b""
    while True:
        chunk = os.read(0, 256 * 1024)
        if not chunk:
            return
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            respond(json.loads(line))
        time.sleep(0.5)


def main():
    if MODE == "slow-start":
        log("starting slowly on purpose")
        time.sleep(3)
    if MODE == "slow-reader":
        read_slowly()
        return
    for line in sys.stdin:
        if not respond(json.loads(line)):
            while True:
                time.sleep(3600)


if __name__ == "__main__":
    main()
