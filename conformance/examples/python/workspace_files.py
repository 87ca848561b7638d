"""The files part of LocalWorkspace: paths as bytes, read, write, stat, list,
make_dir, remove (never the working directory or above it), exists and
realpath. Lexical path helpers live here too; the commands part and
workspace_backend use them."""

import errno
import os
import shutil
import stat

MAX_SYMLINK_HOPS = 40


def _path_error(code, path):
    return OSError(code, os.strerror(code), path)


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


class FilesMixin:
    """The files API of LocalWorkspace; needs `working_dir` and
    `_ensure_available()` from it."""

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
