"""A local workspace backend in Python, standard library only.

The environment is a directory on this machine; commands are processes in
their own process groups, started in that directory with a clean
environment. It implements the workspace contract (docs/contract.md) the way
LocalWorkspaceBackend does in C++, and adapter.py serves it to the
conformance suite over the backend protocol (docs/protocol.md).

Everything that names a file or crosses into a process is bytes (paths,
argv, environment, output), so nothing is lost to a text encoding. Every
method may be called from many threads at once.

LocalWorkspace is put together from two parts: the commands
(workspace_commands.py) and the files (workspace_files.py); the error types
and StopToken are in workspace_base.py. All of them can be used from here.

    ws = LocalWorkspace.create(b"/tmp/my-env")
    code, out, err = ws.run(shell=b"echo hello", env={}, timeout=10.0)
    ws.write(ws.working_dir + b"/notes.txt", b"text")
    ws.destroy()
"""

import os
import signal
import threading
import time

from workspace_base import (
    StopToken,
    WorkspaceCancelledError,
    WorkspaceError,
    WorkspaceOutputLimitError,
    WorkspaceTimeoutError,
    WorkspaceUnavailableError,
    _wake,
)
from workspace_commands import (
    DEFAULT_PATH,
    DRAIN_GRACE,
    HEAD_BYTES,
    OUTPUT_LIMIT,
    TERMINATE_GRACE,
    CommandsMixin,
    _group_alive,
    _signal_group,
    repair_utf8,
)
from workspace_files import (
    MAX_SYMLINK_HOPS,
    FilesMixin,
    _remove_tree,
    clean_path,
    normalize_path,
    require_absolute,
)

# What this module offers (the adapter uses it as `wb`); the parts live in
# workspace_base.py, workspace_commands.py and workspace_files.py.
__all__ = [
    "DEFAULT_PATH", "DRAIN_GRACE", "HEAD_BYTES", "MAX_SYMLINK_HOPS", "OUTPUT_LIMIT", "PROVIDER",
    "TERMINATE_GRACE", "LocalWorkspace", "StopToken", "WorkspaceCancelledError", "WorkspaceError",
    "WorkspaceOutputLimitError", "WorkspaceTimeoutError", "WorkspaceUnavailableError",
    "clean_path", "normalize_path", "repair_utf8", "require_absolute",
]

PROVIDER = "python-local"


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


class LocalWorkspace(CommandsMixin, FilesMixin):
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
