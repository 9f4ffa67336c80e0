"""Files written whole or not at all, checksums to verify them, and one writer per folder.

- ``atomic_write(path, data)``: the bytes (or what a writer function writes) go to a temporary
  file with a unique name in ``path``'s folder (``.NAME.XXXXXXXX.ntkbo-tmp``), which is flushed,
  ``fsync``-ed, given the permissions of a newly created file (``0o666`` less the umask) and
  renamed over ``path`` (``os.replace``, atomic on POSIX); the folder is ``fsync``-ed after. A
  reader sees the previous file or the new one, never a part; a writer killed at any point
  (``kill -9``) leaves the previous file intact and at most a hidden temporary file, which
  ``remove_temporaries`` deletes. Concurrent writers of one path never fail: the last rename wins.
- ``sha256(data)``, ``arrays_sha256(arrays)``: the checksums that save files and cell files carry
  and that their readers verify.
- ``lock_folder(folder)``: the one-writer lock of a study or run folder, ``FOLDER/ntkbo.lock``,
  an exclusive ``flock`` held while the writer runs; the file records the holder's process id,
  host, command and start time, which ``FolderLocked``'s message names. The kernel drops the
  ``flock`` of a process that dies, so a lock file left by a killed writer on this host (a stale
  lock) is taken over, with a ``UserWarning`` naming the dead holder. A lock file that records a
  holder on another host and is not locked is refused all the same (that host's process cannot be
  checked from here), with a message saying to delete the file if that process is gone.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import fcntl
import hashlib
import json
import os
import socket
import sys
import tempfile
import threading
import warnings
from typing import Callable, Mapping

import numpy as np

#: The suffix of ``atomic_write``'s temporary files.
TMP_SUFFIX = ".ntkbo-tmp"
#: The lock file's name inside the locked folder.
LOCK_NAME = "ntkbo.lock"

_UMASK_LOCK = threading.Lock()


def umask() -> int:
    """The process's file-creation mask (read from ``/proc/self/status`` where Linux has it, else
    by setting and restoring it under a lock)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def _fsync_dir(folder: str) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike, data: bytes | bytearray | memoryview | Callable) -> str:
    """Writes ``data`` to ``path`` atomically and durably; returns ``path`` as a string.

    ``data``: the bytes, or a function ``write(fh)`` that writes them to a binary file object.
    They go to a temporary file with a unique name in ``path``'s folder (created if missing),
    which is flushed, ``fsync``-ed, given mode ``0o666 & ~umask`` (``tempfile.mkstemp`` creates
    ``0o600``) and renamed over ``path``; then the folder is ``fsync``-ed. On an exception the
    temporary file is removed and ``path`` is left as it was."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    prefix = "." + os.path.basename(path)[:180] + "."
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=TMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as fh:
            if callable(data):
                data(fh)
            else:
                fh.write(data)
            fh.flush()
            os.fchmod(fh.fileno(), 0o666 & ~umask())
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(folder)
    return path


def remove_temporaries(folder: str) -> list[str]:
    """Deletes the temporary files that ``atomic_write`` calls killed in ``folder`` left
    (``.*.ntkbo-tmp``; only with no writer running there, i.e. under ``lock_folder``); returns
    their paths."""
    if not os.path.isdir(folder):
        return []
    gone = []
    for name in os.listdir(folder):
        if name.startswith(".") and name.endswith(TMP_SUFFIX):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(folder, name))
                gone.append(os.path.join(folder, name))
    return gone


# ---------------------------------------------------------------------------------------------
# checksums


def sha256(data: bytes | bytearray | memoryview) -> str:
    """``"sha256:"`` and the hexadecimal SHA-256 of ``data``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def arrays_sha256(arrays: Mapping[str, np.ndarray]) -> str:
    """``"sha256:"`` and the hexadecimal SHA-256 over ``arrays`` in the order of their sorted names:
    for each, its name, dtype (``dtype.str``), shape and C-order bytes. Equal names, dtypes, shapes
    and values give equal checksums whatever the file layout that held them."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}\0{a.dtype.str}\0{a.shape}\0".encode())
        h.update(a.tobytes())
    return "sha256:" + h.hexdigest()


# ---------------------------------------------------------------------------------------------
# one writer per folder


class FolderLocked(RuntimeError):
    """Another process holds a folder's lock (``lock_folder``); ``holder`` is its record (``pid``,
    ``host``, ``command``, ``started``), ``path`` the lock file."""

    def __init__(self, message: str, path: str, holder: dict):
        super().__init__(message)
        self.path = path
        self.holder = holder


def _read_record(fd: int) -> dict:
    """The JSON record of an open lock file (``{}`` if empty or unreadable)."""
    try:
        size = os.fstat(fd).st_size
        text = os.pread(fd, min(size, 65536), 0).decode("utf-8", "replace")
        record = json.loads(text) if text.strip() else {}
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _pid_running(pid) -> bool | None:
    """Whether process ``pid`` exists on this host (``None``: not a pid)."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return True
    return True


def _describe(record: dict) -> str:
    pid, host = record.get("pid"), record.get("host")
    text = f"process {pid} on host {host}"
    if record.get("command"):
        text += f" (command: {record['command']})"
    if record.get("started"):
        text += f", since {record['started']}"
    return text


class FolderLock:
    """A held folder lock (``lock_folder``). ``release()`` (or leaving a ``with`` block) deletes
    the lock file and drops the ``flock``; ``stale`` is the record of a dead holder that was taken
    over (``None`` if there was none)."""

    def __init__(self, folder: str, path: str, fd: int, record: dict, stale: dict | None):
        self.folder, self.path, self.record, self.stale = folder, path, record, stale
        self._fd: int | None = fd

    @property
    def held(self) -> bool:
        """Whether this object still holds the lock."""
        return self._fd is not None

    def release(self) -> None:
        """Deletes the lock file (while still holding the ``flock``, so no other process can lock
        the file being deleted) and closes it; a second call does nothing."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            with contextlib.suppress(FileNotFoundError):
                if os.stat(self.path).st_ino == os.fstat(fd).st_ino:
                    os.unlink(self.path)
        finally:
            os.close(fd)

    def __enter__(self) -> "FolderLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def lock_folder(folder: str | os.PathLike, command: str | None = None) -> FolderLock:
    """Takes the one-writer lock of ``folder`` (created if missing): ``folder/ntkbo.lock``.

    Returns a ``FolderLock`` (a context manager). ``FolderLocked`` if another process holds it: the
    message names the lock file, the holder's process id, host, command and start time, and what to
    do. A lock file whose holder died on this host (killed: nothing deleted the file, and the
    kernel dropped its ``flock``) is taken over with a ``UserWarning`` naming the dead holder; an
    unlocked lock file recording a holder on another host is refused with ``FolderLocked`` (that
    process cannot be checked from here: delete the file once it is gone). ``command``: recorded
    as the holder's command
    (default: ``sys.argv`` joined by spaces). ``ValueError`` naming the folder if its file system
    cannot lock files or the lock file cannot be opened."""
    folder = os.fspath(folder)
    path = os.path.join(folder, LOCK_NAME)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as err:
        raise ValueError(f"{folder}: cannot create the folder ({err.strerror or err})") from None
    host = socket.gethostname()
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as err:
            raise ValueError(f"{folder}: cannot open its lock file {path} ({err.strerror or err})"
                             ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            holder = _read_record(fd)
            os.close(fd)
            if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise ValueError(f"{path}: cannot lock the folder {folder} ({err.strerror or err})"
                                 "; its file system does not support file locks (flock)") from None
            mine = holder.get("pid") == os.getpid() and holder.get("host") == host
            raise FolderLocked(
                f"{folder} is in use: {_describe(holder) if holder else 'another process'}"
                f"{' (this process)' if mine else ''} holds its lock {path}. One process writes "
                "a folder at a time: wait for it to finish, or use another output folder",
                path, holder) from None
        try:
            same = os.path.samestat(os.stat(path), os.fstat(fd))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the holder released (deleted) this file meanwhile: lock the new one
    previous = _read_record(fd)
    if previous and previous.get("host") not in (None, host):
        os.close(fd)
        raise FolderLocked(
            f"{folder}: its lock file {path} records {_describe(previous)}, another host, whose "
            "process cannot be checked from here. If that process is no longer running, delete "
            f"{path} and start again", path, previous)
    record = {"pid": os.getpid(), "host": host,
              "command": command if command is not None else " ".join(sys.argv),
              "started": datetime.datetime.now(datetime.timezone.utc).isoformat(
                  timespec="seconds")}
    data = json.dumps(record).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)
    os.fsync(fd)
    stale = previous or None
    if stale is not None:
        running = _pid_running(stale.get("pid"))
        state = "is not running" if running is False else "no longer holds it"
        warnings.warn(f"{path}: took over the stale lock of {_describe(stale)}, which {state} "
                      "(killed?); the files it was writing were left as they were before",
                      UserWarning, stacklevel=2)
    return FolderLock(folder, path, fd, record, stale)
