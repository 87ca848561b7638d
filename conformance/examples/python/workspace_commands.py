"""The commands part of LocalWorkspace: argv or a shell script in the
working directory with a clean environment, in a process group of its own;
output collected up to the limit, timeouts, cancellation, and the process
groups a command leaves behind."""

import errno
import math
import os
import select
import selectors
import signal
import subprocess
import time

from workspace_base import (
    StopToken,
    WorkspaceCancelledError,
    WorkspaceError,
    WorkspaceOutputLimitError,
    WorkspaceTimeoutError,
    WorkspaceUnavailableError,
)
from workspace_files import _join

OUTPUT_LIMIT = 10 * 1024 * 1024  # bytes per stream
HEAD_BYTES = 64 * 1024  # what an output-limit error keeps of each stream
DRAIN_GRACE = 0.2  # after the command's own process exits, for output still in the pipes
TERMINATE_GRACE = 0.5  # between SIGTERM and SIGKILL to the process group
DEFAULT_PATH = b"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def repair_utf8(data):
    """Bytes that are not UTF-8 become U+FFFD, one per maximal bad sequence."""
    return data.decode("utf-8", "replace").encode("utf-8")


def _head(data):
    text = repair_utf8(data[: HEAD_BYTES + 4])[:HEAD_BYTES]
    return text.decode("utf-8", "ignore").encode("utf-8")  # no character cut in half


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


class CommandsMixin:
    """The commands API of LocalWorkspace; needs `working_dir`, `_env` (the
    shared environment) and `_ensure_available()` from it."""

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
                        self._on_wake(process, pidfd, stop, wake_r)
            return self._finish(process, bytes(streams[out_fd]), bytes(streams[err_fd]))
        finally:
            if process.returncode is None:
                _signal_group(pid, signal.SIGKILL)
                process.wait()
            selector.close()
            os.close(pidfd)
            process.stdout.close()
            process.stderr.close()

    def _on_wake(self, process, pidfd, stop, wake_r):
        """The wake pipe: raises when the environment was destroyed or the run
        cancelled (a spurious wake-up returns)."""
        try:
            os.read(wake_r, 64)
        except BlockingIOError:
            pass
        if self._env.destroyed:
            _signal_group(process.pid, signal.SIGKILL)
            process.wait()
            raise WorkspaceUnavailableError(
                "the environment was destroyed while the command ran")
        if stop.stop_requested():
            self._terminate(process, pidfd)
            raise WorkspaceCancelledError("the command was cancelled")

    def _finish(self, process, out, err):
        """The command's output is all read: its exit code and streams."""
        status = process.wait()
        if _group_has_members(process.pid):
            with self._env.lock:
                self._env.lingering.add(process.pid)
        if self._env.destroyed:
            raise WorkspaceUnavailableError(
                "the environment was destroyed while the command ran")
        code = 128 - status if status < 0 else status
        return code, repair_utf8(out), repair_utf8(err)

    @staticmethod
    def _terminate(process, pidfd):
        """SIGTERM to the group, a short grace, then SIGKILL (always: children
        may ignore SIGTERM or outlive their parent). The leader is reaped only
        at the end, so its group id cannot name another process's group."""
        _signal_group(process.pid, signal.SIGTERM)
        select.select([pidfd], [], [], TERMINATE_GRACE)
        _signal_group(process.pid, signal.SIGKILL)
        process.wait()
