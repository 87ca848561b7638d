"""A local workspace backend in Python, standard library only.

The environment is a directory on this machine; commands are processes in
their own process groups, started in that directory with a clean
environment. It implements the workspace contract (docs/contract.md) the way
LocalWorkspaceBackend does in C++, and adapter.py serves it to the
conformance suite over the backend protocol (docs/protocol.md).

Everything that names a file or crosses into a process is bytes (paths,
argv, environment, output), so nothing is lost to a text encoding. Every
method may be called from many threads at once.

    ws = LocalWorkspace.create(b"/tmp/my-env")
    code, out, err = ws.run(shell=b"echo hello", env={}, timeout=10.0)
    ws.write(ws.working_dir + b"/notes.txt", b"text")
    ws.destroy()
"""

import errno
import math
import os
import select
import selectors
import shutil
import signal
import stat
import subprocess
import threading
import time

OUTPUT_LIMIT = 10 * 1024 * 1024  # bytes per stream
HEAD_BYTES = 64 * 1024  # what an output-limit error keeps of each stream
DRAIN_GRACE = 0.2  # after the command's own process exits, for output still in the pipes
TERMINATE_GRACE = 0.5  # between SIGTERM and SIGKILL to the process group
MAX_SYMLINK_HOPS = 40
DEFAULT_PATH = b"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PROVIDER = "python-local"


class WorkspaceError(Exception):
    """A deliberate refusal or failure; `kind` is the protocol's error kind."""

    kind = "workspace"

    def data(self):
        return {}


class WorkspaceUnavailableError(WorkspaceError):
    kind = "unavailable"


class WorkspaceCancelledError(WorkspaceError):
    kind = "cancelled"


class WorkspaceTimeoutError(WorkspaceError):
    kind = "timeout"

    def __init__(self, message, out, err, timeout):
        super().__init__(message)
        self.out, self.err, self.timeout = out, err, timeout


class WorkspaceOutputLimitError(WorkspaceError):
    kind = "output_limit"

    def __init__(self, message, limit, out_head, err_head):
        super().__init__(message)
        self.limit, self.out_head, self.err_head = limit, out_head, err_head


class StopToken:
    """Cancellation of a run: request_stop() from any thread stops it."""

    def __init__(self):
        self._lock = threading.Lock()
        self._stopped = False
        self._wake_fds = set()

    def request_stop(self):
        with self._lock:
            self._stopped = True
            for fd in self._wake_fds:
                _wake(fd)

    def stop_requested(self):
        with self._lock:
            return self._stopped

    def _attach(self, fd):
        with self._lock:
            self._wake_fds.add(fd)
            return self._stopped

    def _detach(self, fd):
        with self._lock:
            self._wake_fds.discard(fd)


def _wake(fd):
    try:
        os.write(fd, b"x")
    except OSError:
        pass


def _path_error(code, path):
    return OSError(code, os.strerror(code), path)


def repair_utf8(data):
    """Bytes that are not UTF-8 become U+FFFD, one per maximal bad sequence."""
    return data.decode("utf-8", "replace").encode("utf-8")


def _head(data):
    text = repair_utf8(data[: HEAD_BYTES + 4])[:HEAD_BYTES]
    return text.decode("utf-8", "ignore").encode("utf-8")  # no character cut in half


def require_absolute(path):
    if not isinstance(path, bytes) or not path.startswith(b"/") or b"\0" in path:
        raise ValueError("paths must be absolute and free of NUL: %r" % (path,))


def _components(path):
    return [part for part in path.split(b"/") if part]


def clean_path(path):
    """Collapses '//' and '.'; keeps '..' (links decide what it means)."""
    return b"/" + b"/".join(p for p in _components(path) if p != b".")


def normalize_path(path):
    """Lexically: '.' dropped, '..' applied (never above '/')."""
    parts = []
    for part in _components(path):
        if part == b"..":
            if parts:
                parts.pop()
        elif part != b".":
            parts.append(part)
    return b"/" + b"/".join(parts)


def _split_last(cleaned):
    if cleaned == b"/":
        return b"/", b""
    parent, _, name = cleaned.rpartition(b"/")
    return parent or b"/", name


def _is_self_or_ancestor(path, directory):
    return path == b"/" or path == directory or directory.startswith(path + b"/")


class _Environment:
    """What every backend object on one directory shares: the commands that
    run there, the process groups they left behind, and whether it was
    destroyed."""

    def __init__(self):
        self.lock = threading.Lock()
        self.destroyed = False
        self.running = {}  # run id -> (process group or None, wake fd)
        self.lingering = set()
        self.next_id = 0


_environments = {}
_environments_lock = threading.Lock()


def _environment(root):
    with _environments_lock:
        return _environments.setdefault(root, _Environment())


def _group_alive(group):
    """A process of ours is still in `group` (and the id is not another's)."""
    session = os.getsid(0)
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == group and int(fields[3]) == session:
            return True
    return False


class LocalWorkspace:
    """One environment: a directory and the commands that run in it."""

    capabilities = ("commands", "filesystem", "realpath")

    def __init__(self, root, attached):
        self.working_dir = root
        self._attached = attached
        self._env = _environment(root)

    @classmethod
    def create(cls, root):
        """Makes the directory (with parents) and names it by its real path."""
        require_absolute(root)
        try:
            os.makedirs(root, exist_ok=True)
            real = os.path.realpath(root)
        except OSError as e:
            raise WorkspaceUnavailableError("cannot create %r: %s" % (root, e.strerror))
        return cls(real, attached=False)

    @classmethod
    def attach(cls, provider, ref_id):
        """No I/O: a directory that is gone makes every operation unavailable."""
        if provider != PROVIDER:
            raise ValueError("a %s backend attaches only to %s refs" % (PROVIDER, PROVIDER))
        require_absolute(ref_id)
        return cls(normalize_path(ref_id), attached=True)

    @property
    def ref(self):
        return (PROVIDER, self.working_dir)

    def _ensure_available(self):
        if self._env.destroyed:
            raise WorkspaceUnavailableError("the environment was destroyed")
        if not os.path.isdir(self.working_dir):
            raise WorkspaceUnavailableError("the environment %r no longer exists" % self.working_dir)

    # -- lifetime -----------------------------------------------------------

    def destroy(self):
        """Kills what runs there, removes the directory. Idempotent."""
        env = self._env
        with env.lock:
            env.destroyed = True
            for group, wake_fd in env.running.values():
                if group is not None:
                    _signal_group(group, signal.SIGKILL)
                _wake(wake_fd)
            for group in env.lingering:
                if _group_alive(group):
                    _signal_group(group, signal.SIGKILL)
            env.lingering.clear()
        for _ in range(50):
            try:
                _remove_tree(self.working_dir, force=True)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.02)  # killed processes may still write into the tree
        _remove_tree(self.working_dir, force=True)

    # -- commands -----------------------------------------------------------

    def run(self, argv=None, shell=None, env=None, timeout=None, output_limit=OUTPUT_LIMIT,
            stop=None):
        """Runs argv (no shell) or a shell script; returns (exit code, out, err),
        the streams repaired to UTF-8. Raises ValueError for what cannot run."""
        env = env or {}
        if shell is None and not argv:
            raise ValueError("an empty argv")
        for item in ([shell] if shell is not None else argv):
            if b"\0" in item:
                raise ValueError("a command holds a NUL byte")
        for name, value in env.items():
            if not name or b"=" in name or b"\0" in name or b"\0" in value:
                raise ValueError("an environment variable no environment can hold: %r" % (name,))
        if timeout is not None and not (
            isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0
        ):
            raise ValueError("the timeout must be positive and finite, not %r" % (timeout,))
        self._ensure_available()
        stop = stop or StopToken()
        if stop.stop_requested():
            raise WorkspaceCancelledError("the command was cancelled before it started")
        full_env = {b"PATH": DEFAULT_PATH, b"HOME": self.working_dir, b"LANG": b"C.UTF-8"}
        full_env.update(env)
        args = [b"/bin/sh", b"-c", shell] if shell is not None else list(argv)
        return self._run(args, full_env, timeout, output_limit, stop, shell is None)

    def _run(self, args, env, timeout, limit, stop, is_argv):
        wake_r, wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        ours = self._env
        with ours.lock:
            if ours.destroyed:
                os.close(wake_r)
                os.close(wake_w)
                raise WorkspaceUnavailableError("the environment was destroyed")
            run_id = ours.next_id
            ours.next_id += 1
            ours.running[run_id] = (None, wake_w)
        stop._attach(wake_w)
        try:
            try:
                process = subprocess.Popen(
                    args, cwd=self.working_dir, env=env, stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, process_group=0)
            except OSError as e:
                return self._not_run(args, e, env, timeout, limit, stop, is_argv)
            with ours.lock:
                ours.running[run_id] = (process.pid, wake_w)
                destroyed = ours.destroyed
            if destroyed:
                _signal_group(process.pid, signal.SIGKILL)
            return self._collect(process, timeout, limit, stop, wake_r)
        finally:
            stop._detach(wake_w)
            with ours.lock:
                ours.running.pop(run_id, None)
            os.close(wake_r)
            os.close(wake_w)

    def _not_run(self, args, error, env, timeout, limit, stop, is_argv):
        """The program never started: 127 and 126 are results, as a shell says."""
        name = args[0]
        if error.errno == errno.E2BIG:
            raise WorkspaceError("cannot start %r: argument list too long" % (name,))
        if is_argv and error.errno == errno.ENOEXEC:
            # A script without "#!": run it with sh, as execvp does.
            program = _find_program(name, env.get(b"PATH", b""), self.working_dir)
            return self._run([b"/bin/sh", program] + args[1:], env, timeout, limit, stop, False)
        self._ensure_available()
        if error.errno in (errno.ENOENT, errno.ENOTDIR):
            return 127, b"", name + b": not found\n"
        if error.errno in (errno.EACCES, errno.EPERM, errno.EISDIR):
            return 126, b"", name + b": Permission denied\n"
        raise WorkspaceError("cannot start %r: %s" % (name, error.strerror))

    def _collect(self, process, timeout, limit, stop, wake_r):
        pid = process.pid
        streams = {process.stdout.fileno(): bytearray(), process.stderr.fileno(): bytearray()}
        out_fd, err_fd = process.stdout.fileno(), process.stderr.fileno()
        pidfd = os.pidfd_open(pid)
        selector = selectors.DefaultSelector()
        for fd in streams:
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ)
        selector.register(pidfd, selectors.EVENT_READ)
        selector.register(wake_r, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout if timeout is not None else None
        drain_until = None
        open_fds = set(streams)

        def drain(fd):
            while True:
                try:
                    chunk = os.read(fd, 1 << 16)
                except BlockingIOError:
                    return True
                if not chunk:
                    selector.unregister(fd)
                    open_fds.discard(fd)
                    return True
                streams[fd] += chunk
                if len(streams[fd]) > limit:
                    return False

        try:
            while True:
                if drain_until is not None and not open_fds:
                    break
                now = time.monotonic()
                if deadline is not None and drain_until is None and now >= deadline:
                    self._terminate(process, pidfd)
                    for fd in list(open_fds):
                        drain(fd)
                    raise WorkspaceTimeoutError(
                        "the command timed out after %g s" % timeout,
                        repair_utf8(bytes(streams[out_fd][:limit])),
                        repair_utf8(bytes(streams[err_fd][:limit])), timeout)
                if drain_until is not None and now >= drain_until:
                    break
                ends = [t for t in (deadline if drain_until is None else None, drain_until)
                        if t is not None]
                wait = max(0.0, min(ends) - now) if ends else None
                for key, _ in selector.select(wait):
                    fd = key.fd
                    if fd in streams and fd in open_fds:
                        if not drain(fd):
                            _signal_group(pid, signal.SIGKILL)
                            process.wait()
                            raise WorkspaceOutputLimitError(
                                "output exceeded the limit of %d bytes per stream" % limit, limit,
                                _head(bytes(streams[out_fd])), _head(bytes(streams[err_fd])))
                    elif fd == pidfd and drain_until is None:
                        selector.unregister(pidfd)
                        drain_until = time.monotonic() + DRAIN_GRACE
                    elif fd == wake_r:
                        try:
                            os.read(wake_r, 64)
                        except BlockingIOError:
                            pass
                        if self._env.destroyed:
                            _signal_group(pid, signal.SIGKILL)
                            process.wait()
                            raise WorkspaceUnavailableError(
                                "the environment was destroyed while the command ran")
                        if stop.stop_requested():
                            self._terminate(process, pidfd)
                            raise WorkspaceCancelledError("the command was cancelled")
            status = process.wait()
            if _group_has_members(pid):
                with self._env.lock:
                    self._env.lingering.add(pid)
            if self._env.destroyed:
                raise WorkspaceUnavailableError(
                    "the environment was destroyed while the command ran")
            code = 128 - status if status < 0 else status
            return code, repair_utf8(bytes(streams[out_fd])), repair_utf8(bytes(streams[err_fd]))
        finally:
            if process.returncode is None:
                _signal_group(pid, signal.SIGKILL)
                process.wait()
            selector.close()
            os.close(pidfd)
            process.stdout.close()
            process.stderr.close()

    @staticmethod
    def _terminate(process, pidfd):
        """SIGTERM to the group, a short grace, then SIGKILL (always: children
        may ignore SIGTERM or outlive their parent). The leader is reaped only
        at the end, so its group id cannot name another process's group."""
        _signal_group(process.pid, signal.SIGTERM)
        select.select([pidfd], [], [], TERMINATE_GRACE)
        _signal_group(process.pid, signal.SIGKILL)
        process.wait()

    # -- files --------------------------------------------------------------

    def _check(self, path):
        require_absolute(path)
        self._ensure_available()

    def read(self, path):
        self._check(path)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise _path_error(errno.EISDIR, path)
            if not stat.S_ISREG(st.st_mode):
                raise _path_error(errno.EINVAL, path)  # a FIFO or device: never wait on it
            chunks = []
            while True:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return b"".join(chunks)
                chunks.append(chunk)
        finally:
            os.close(fd)

    def write(self, path, data):
        self._check(path)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
        try:
            fd = os.open(path, flags, 0o666)
        except FileNotFoundError:
            parent, _ = _split_last(clean_path(path))
            try:
                _make_directories(parent)
            except FileExistsError:
                raise _path_error(errno.ENOTDIR, path)
            fd = os.open(path, flags, 0o666)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise _path_error(errno.EINVAL, path)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)

    def stat(self, path):
        self._check(path)
        cleaned = clean_path(path)
        st = _stat_or_link(cleaned)
        _, name = _split_last(cleaned)
        return _entry(name or b"/", cleaned, st)

    def list(self, path):
        self._check(path)
        cleaned = clean_path(path)
        entries = []
        for name in sorted(os.listdir(cleaned)):
            child = cleaned.rstrip(b"/") + b"/" + name
            try:
                entries.append(_entry(name, child, _stat_or_link(child)))
            except FileNotFoundError:
                continue  # removed while we list
            except OSError:
                entries.append((name, child, False, None))
        return entries

    def make_dir(self, path):
        self._check(path)
        _make_directories(path)

    def remove(self, path):
        self._check(path)
        self._refuse_working_dir(path)
        # The lexical check cannot see links: resolve all but the last part
        # (which remove never follows) and check again.
        parent, name = _split_last(clean_path(path))
        target = _resolve(path) if name == b".." else _join(_resolve(parent), name)
        self._refuse_working_dir(target)
        try:
            _remove_tree(target, force=False)
        except OSError as e:
            raise _path_error(e.errno, path)

    def _refuse_working_dir(self, path):
        if _is_self_or_ancestor(normalize_path(path), self.working_dir):
            raise ValueError("refusing to remove the working directory or an ancestor: %r" % path)

    def exists(self, path):
        self._check(path)
        try:
            _stat_or_link(path)
            return True
        except OSError:
            return False

    def realpath(self, path):
        self._check(path)
        return _resolve(path)


def _group_has_members(group):
    try:
        os.killpg(group, 0)
        return True
    except OSError:
        return False


def _signal_group(group, sig):
    try:
        os.killpg(group, sig)
    except OSError:
        pass


def _find_program(name, path_value, root):
    if b"/" in name:
        return name if name.startswith(b"/") else _join(root, name)
    for directory in path_value.split(b":"):
        if not directory.startswith(b"/"):
            directory = _join(root, directory) if directory else root
        candidate = _join(directory, name)
        if os.path.isfile(candidate):
            return candidate
    return name


def _join(directory, name):
    return directory.rstrip(b"/") + b"/" + name


def _entry(name, path, st):
    is_dir = stat.S_ISDIR(st.st_mode)
    return (name, path, is_dir, None if is_dir else st.st_size)


def _stat_or_link(path):
    """Follows links; a link that cannot be followed is described itself."""
    try:
        return os.stat(path)
    except OSError as e:
        if e.errno in (errno.ENOENT, errno.ELOOP):
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                return st
        raise


def _make_directories(path):
    parts = _components(path)
    current = b""
    for i, part in enumerate(parts):
        current += b"/" + part
        try:
            os.mkdir(current, 0o777)
        except FileExistsError:
            if os.path.isdir(current):
                continue
            raise _path_error(errno.EEXIST if i + 1 == len(parts) else errno.ENOTDIR, path)


def _remove_tree(path, force):
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(path)
        return
    if force:
        for directory, _, _ in os.walk(path):
            try:
                os.chmod(directory, 0o700)
            except OSError:
                pass
    shutil.rmtree(path)


def _resolve(path):
    """realpath -m: links resolved from the link's directory, '..' after a
    link from its target, missing parts kept as written."""
    pending = list(reversed(_components(path)))
    resolved = b"/"
    hops = 0
    while pending:
        part = pending.pop()
        if part == b".":
            continue
        if part == b"..":
            resolved = _split_last(resolved)[0]
            continue
        candidate = _join(resolved, part)
        try:
            st = os.lstat(candidate)
        except OSError:
            resolved = candidate
            continue
        if not stat.S_ISLNK(st.st_mode):
            resolved = candidate
            continue
        hops += 1
        if hops > MAX_SYMLINK_HOPS:
            raise _path_error(errno.ELOOP, path)
        target = os.readlink(candidate)
        if target.startswith(b"/"):
            resolved = b"/"
        pending.extend(reversed(_components(target)))
    return resolved
