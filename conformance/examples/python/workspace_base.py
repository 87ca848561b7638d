"""What the parts of the Python backend share: the error types the protocol
names (each with its `kind`) and StopToken, the cancellation of a run."""

import os
import threading


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
