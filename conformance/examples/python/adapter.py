#!/usr/bin/env python3
"""Serves workspace_backend.LocalWorkspace over the backend protocol
(docs/protocol.md): JSON-RPC 2.0 on stdin and stdout, one message per line.

    lizard-conformance --backend command -- python3 conformance/examples/python/adapter.py

One process serves one rule session: its environments live in a temporary
directory removed when stdin ends. Requests run on threads of their own, so
several are in flight at once; $/cancelRequest stops a run.
"""

import base64
import binascii
import errno
import json
import os
import shutil
import stat
import sys
import tempfile
import threading

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workspace_backend as wb  # noqa: E402  (the directory is on the path now)

PROTOCOL_VERSION = "1"
METHODS = {
    "initialize", "$/ping", "backend/new", "backend/attach", "backend/ref", "backend/destroy",
    "backend/drop", "environment/destroy", "run", "fs/read", "fs/write", "fs/stat", "fs/list",
    "fs/make_dir", "fs/remove", "fs/exists", "fs/realpath",
}


class ProtocolError(Exception):
    """A request this adapter cannot take: answered with a JSON-RPC code."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


# -- the protocol's value types ---------------------------------------------

def text_in(value):
    """Text: a string, or {"b64": ...} for bytes that are not UTF-8."""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, dict) and set(value) == {"b64"}:
        return base64.b64decode(value["b64"], validate=True)
    raise ProtocolError(-32602, "not Text: %r" % (value,))


def text_out(data):
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"b64": base64.b64encode(data).decode("ascii")}


class Base64:
    """Bytes that go out as a base64 string. send() encodes them a slice at a
    time while it writes: no call holds the interpreter long (a 64 MiB file is
    85 MiB of base64; one b64encode and one json.dumps of it held it for 1.3 s,
    every $/ping waited that long, and more than 20 s on a loaded host)."""

    __slots__ = ("view",)
    SLICE = 3 << 18  # 768 KiB, a multiple of 3: the slices' base64 joins up

    def __init__(self, data):
        self.view = memoryview(data)  # here, so that a wrong type fails before a byte is sent


def bytes_out(data):
    return Base64(data)


def bytes_in(text):
    """Bytes from base64 text, decoded a slice at a time (see Base64), and at
    least as strict as one b64decode(text, validate=True): padding only at
    the end."""
    if not isinstance(text, str):
        raise ProtocolError(-32602, "not base64 text: %r" % (type(text).__name__,))
    if text.find("=", 0, max(len(text) - 2, 0)) != -1:
        raise binascii.Error("padding before the end of the base64 text")
    step = Base64.SLICE // 3 * 4
    return b"".join(base64.b64decode(text[start:start + step], validate=True)
                    for start in range(0, len(text), step))


def json_pieces(value):
    """The JSON text of `value` as bytes, with each Base64 in it left whole."""
    if isinstance(value, Base64):
        yield value
    elif isinstance(value, dict):
        yield b"{"
        for i, (key, item) in enumerate(value.items()):
            yield (b"," if i else b"") + json_bytes(key) + b":"
            yield from json_pieces(item)
        yield b"}"
    elif isinstance(value, list):
        yield b"["
        for i, item in enumerate(value):
            if i:
                yield b","
            yield from json_pieces(item)
        yield b"]"
    else:
        yield json_bytes(value)


def json_bytes(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def entry_out(entry):
    name, path, is_dir, size = entry
    out = {"name": text_out(name), "path": text_out(path), "is_dir": is_dir}
    if size is not None:
        out["size"] = size
    return out


def error_out(exc):
    """The error object of an exception: the contract's kind and its fields."""
    data = {}
    if isinstance(exc, wb.WorkspaceTimeoutError):
        data = {"out": bytes_out(exc.out), "err": bytes_out(exc.err), "timeout": exc.timeout}
    elif isinstance(exc, wb.WorkspaceOutputLimitError):
        data = {"limit": exc.limit, "out_head": bytes_out(exc.out_head),
                "err_head": bytes_out(exc.err_head)}
    if isinstance(exc, wb.WorkspaceError):
        kind = exc.kind
    elif isinstance(exc, ValueError):
        kind = "invalid_argument"
    elif isinstance(exc, OSError) and exc.errno in errno.errorcode:
        kind = "path"
        data = {"errno": errno.errorcode[exc.errno]}
        if exc.filename is not None:
            name = exc.filename
            data["path"] = text_out(name if isinstance(name, bytes) else name.encode())
    else:
        kind = "error"
    data["kind"] = kind
    return {"code": -32000, "message": str(exc) or type(exc).__name__, "data": data}


# -- the server -------------------------------------------------------------

class Adapter:
    def __init__(self, out):
        self.out = out
        self.out_lock = threading.Lock()
        self.lock = threading.Lock()
        self.backends = {}
        self.next_handle = 1
        self.runs = {}  # request id -> StopToken
        self.threads = set()
        self.base = tempfile.mkdtemp(prefix="lizard-python-").encode()
        self.counter = 0

    def send(self, message):
        pieces = list(json_pieces(message))  # what can fail, before a byte is written
        with self.out_lock:
            try:
                for piece in pieces:
                    if isinstance(piece, Base64):
                        view = piece.view
                        self.out.write(b'"')
                        for start in range(0, len(view), Base64.SLICE):
                            self.out.write(base64.b64encode(view[start:start + Base64.SLICE]))
                        self.out.write(b'"')
                    else:
                        self.out.write(piece)
                self.out.write(b"\n")
                self.out.flush()
            except BaseException as e:
                # A line begun cannot be taken back, and nothing written after
                # it would parse: the runner is told by the exit instead.
                sys.stderr.write("adapter: writing an answer failed (%r); exiting\n" % (e,))
                sys.stderr.flush()
                os._exit(1)

    def serve(self, lines):
        for line in lines:
            if not line.strip():
                continue
            try:
                request = json.loads(line)
            except ValueError:
                self.send({"jsonrpc": "2.0", "id": None,
                           "error": {"code": -32700, "message": "not JSON"}})
                continue
            method = request.get("method")
            params = request.get("params") or {}
            if "id" not in request:
                if method == "$/cancelRequest":
                    with self.lock:
                        token = self.runs.get(params.get("id"))
                    if token is not None:
                        token.request_stop()
                continue
            if method in ("initialize", "$/ping"):
                # At once, on this thread: initialize before anything else is
                # read; a ping without waiting for a thread to start, which
                # takes turns at the interpreter with every request's thread.
                self.answer(request)
                continue
            token = None
            if method == "run":
                token = wb.StopToken()
                with self.lock:
                    self.runs[request["id"]] = token
            thread = threading.Thread(target=self.answer, args=(request, token), daemon=True)
            with self.lock:
                self.threads.add(thread)
            thread.start()
        self.finish()

    def answer(self, request, token=None):
        try:
            result = self.dispatch(request["method"], request.get("params") or {}, token)
            self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})
        except ProtocolError as e:
            self.send({"jsonrpc": "2.0", "id": request["id"],
                       "error": {"code": e.code, "message": str(e)}})
        except Exception as e:  # every other failure is the contract's error
            self.send({"jsonrpc": "2.0", "id": request["id"], "error": error_out(e)})
        finally:
            with self.lock:
                self.runs.pop(request["id"], None)
                self.threads.discard(threading.current_thread())

    def finish(self):
        """stdin ended: stop the runs, wait for the requests, remove the environments."""
        with self.lock:
            for token in self.runs.values():
                token.request_stop()
            threads = list(self.threads)
        for thread in threads:
            thread.join(10)
        for directory, _, _ in os.walk(self.base):
            try:
                os.chmod(directory, stat.S_IRWXU)
            except OSError:
                pass
        shutil.rmtree(self.base, ignore_errors=True)

    def backend(self, params):
        with self.lock:
            backend = self.backends.get(params.get("backend"))
        if backend is None:
            raise ProtocolError(-32602, "no backend %r" % (params.get("backend"),))
        return backend

    def add(self, backend):
        with self.lock:
            handle = self.next_handle
            self.next_handle += 1
            self.backends[handle] = backend
        return {"backend": handle, "working_dir": text_out(backend.working_dir)}

    def dispatch(self, method, params, token):
        if method not in METHODS:
            raise ProtocolError(-32601, "no method %r" % (method,))
        if method == "initialize":
            return {
                "protocol_version": PROTOCOL_VERSION,
                "name": "LocalWorkspace (Python)",
                "profile": "",
                "capabilities": list(wb.LocalWorkspace.capabilities),
                "deviations": {"commands_run_as_root": os.geteuid() == 0},
                "can_attach": True,
            }
        if method == "$/ping":
            return None
        if method == "backend/new":
            if "overrides" in params:
                raise ValueError("this backend takes no overrides")
            with self.lock:
                self.counter += 1
                root = self.base + b"/env-%d" % self.counter
            return self.add(wb.LocalWorkspace.create(root))
        if method == "backend/attach":
            ref = params["ref"]
            return self.add(wb.LocalWorkspace.attach(ref["provider"], text_in(ref["id"])))
        if method == "environment/destroy":
            ref = params["ref"]
            wb.LocalWorkspace.attach(ref["provider"], text_in(ref["id"])).destroy()
            return None
        if method == "backend/drop":
            with self.lock:
                self.backends.pop(params.get("backend"), None)
            return None
        b = self.backend(params)
        if method == "backend/ref":
            provider, ref_id = b.ref
            return {"ref": {"provider": provider, "id": text_out(ref_id)}}
        if method == "backend/destroy":
            b.destroy()
            return None
        if method == "run":
            command = params["command"]
            argv = [text_in(a) for a in command["argv"]] if "argv" in command else None
            shell = text_in(command["shell"]) if "shell" in command else None
            env = {text_in(n): text_in(v) for n, v in params.get("env", [])}
            timeout = params.get("timeout")
            if isinstance(timeout, str):  # "NaN", "Infinity", "-Infinity"
                timeout = float(timeout.replace("Infinity", "inf"))
            code, out, err = b.run(argv=argv, shell=shell, env=env, timeout=timeout,
                                   output_limit=params["output_limit"], stop=token)
            return {"exit_code": code, "out": bytes_out(out), "err": bytes_out(err)}
        path = text_in(params["path"])
        if method == "fs/read":
            return {"data": bytes_out(b.read(path))}
        if method == "fs/write":
            b.write(path, bytes_in(params["data"]))
            return None
        if method == "fs/stat":
            return entry_out(b.stat(path))
        if method == "fs/list":
            return {"entries": [entry_out(e) for e in b.list(path)]}
        if method == "fs/make_dir":
            b.make_dir(path)
            return None
        if method == "fs/remove":
            b.remove(path)
            return None
        if method == "fs/exists":
            return {"exists": b.exists(path)}
        return {"path": text_out(b.realpath(path))}


def main():
    adapter = Adapter(sys.stdout.buffer)
    adapter.serve(sys.stdin.buffer)


if __name__ == "__main__":
    main()
