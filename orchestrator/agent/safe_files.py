"""Reading and writing files in a folder the agent can write too, without trusting any name in it.

Everything inside a workspace belongs to the agent, who runs as the daemon's own
user: any name in ``.orchestrator/`` may be a symbolic link to a file of the
daemon, a FIFO that blocks whoever opens it, a device, a socket, a directory, a
second hard link to a file elsewhere, or a file of gigabytes, and the folder
itself may have been replaced by a link. So the runtime never uses a path
there directly:

- the folder is opened with ``O_DIRECTORY | O_NOFOLLOW`` relative to its
  parent (itself opened without following a final link), and every file is
  opened relative to that descriptor;
- a file is opened with ``O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC``, so a link is
  refused and a FIFO never blocks, then ``fstat`` must show a regular file with
  a single link, of at most the size limit;
- a write goes to a fresh temporary file created with ``O_EXCL`` in the same
  folder, then renamed over the name: a reader never sees half a file, and the
  name's old target (link, hard link) is never written through. A name that is
  anything but a regular file is refused rather than replaced.

Every refusal is an :class:`UnsafeFile` naming the file and what it is.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from orchestrator.agent.errors import WorkspaceError

_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 65_536


class UnsafeFile(WorkspaceError):
    """A file or folder the agent controls that is not what the runtime may use.

    ``path`` is the file, ``problem`` what is wrong with it (``is a symbolic
    link``, ``is a FIFO``, ``is 5000 bytes, more than the limit of 4096``);
    ``too_large`` tells a size refusal apart from a wrong kind of file.
    """

    def __init__(self, path: Path, problem: str, *, too_large: bool = False) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem
        self.too_large = too_large


def describe(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words."""
    kinds = (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISREG, "a regular file"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _lstat(name: str, dir_fd: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _refusal(path: Path, name: str, dir_fd: int, error: OSError, verb: str) -> UnsafeFile:
    """The error for an ``open`` that failed: what the name really is, when that explains it."""
    info = _lstat(name, dir_fd)
    if info is not None and not stat.S_ISREG(info.st_mode):
        return UnsafeFile(path, f"is {describe(info.st_mode)}, not a regular file")
    return UnsafeFile(path, f"cannot be {verb}: {error.strerror or error}")


@contextlib.contextmanager
def open_folder(folder: Path, *, create: bool = False) -> Iterator[int]:
    """A descriptor of ``folder``, checked to be a real directory (no link) in its parent.

    Raises :class:`UnsafeFile` when ``folder`` (or its parent's last component)
    is a link or not a directory, and ``FileNotFoundError`` when it is absent
    and ``create`` is false.
    """
    parent = folder.parent
    try:
        parent_fd = os.open(parent, _DIR_FLAGS)
    except FileNotFoundError:
        raise
    except OSError as error:
        raise UnsafeFile(parent, f"is not a plain directory: {error.strerror}") from None
    try:
        if create:
            with contextlib.suppress(FileExistsError):
                os.mkdir(folder.name, 0o700, dir_fd=parent_fd)
        try:
            fd = os.open(folder.name, _DIR_FLAGS, dir_fd=parent_fd)
        except FileNotFoundError:
            raise
        except OSError as error:
            info = _lstat(folder.name, parent_fd)
            if info is not None and not stat.S_ISDIR(info.st_mode):
                raise UnsafeFile(
                    folder, f"is {describe(info.st_mode)}; it must be a plain directory"
                ) from None
            raise UnsafeFile(folder, f"cannot be opened: {error.strerror}") from None
    finally:
        os.close(parent_fd)
    try:
        yield fd
    finally:
        os.close(fd)


def open_regular(dir_fd: int, name: str, *, path: Path, max_bytes: int | None = None) -> int:
    """A read descriptor of ``name`` in ``dir_fd`` once it is known to be a plain regular file.

    ``path`` is only used in messages. Raises ``FileNotFoundError`` when the
    name is absent and :class:`UnsafeFile` for anything but a regular file with
    one link (and at most ``max_bytes`` when given).
    """
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        raise
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise UnsafeFile(path, "is a symbolic link, not a regular file") from None
        raise _refusal(path, name, dir_fd, error, "read") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeFile(path, f"is {describe(info.st_mode)}, not a regular file")
        if info.st_nlink != 1:
            raise UnsafeFile(path, f"has {info.st_nlink} hard links; it must have exactly one")
        if max_bytes is not None and info.st_size > max_bytes:
            raise _too_large(path, info.st_size, max_bytes)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_at(dir_fd: int, name: str, *, path: Path, max_bytes: int) -> bytes | None:
    """The bytes of ``name`` in ``dir_fd`` (at most ``max_bytes``), or None when it is absent."""
    try:
        fd = open_regular(dir_fd, name, path=path, max_bytes=max_bytes)
    except FileNotFoundError:
        return None
    try:
        chunks: list[bytes] = []
        size = 0
        # The file may still grow after fstat: never read more than one byte past the limit.
        while size <= max_bytes:
            chunk = os.read(fd, min(_CHUNK, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > max_bytes:
        raise _too_large(path, size, max_bytes)
    return b"".join(chunks)


def write_at(dir_fd: int, name: str, data: bytes, *, path: Path, mode: int = 0o600) -> None:
    """Replace ``name`` in ``dir_fd`` with ``data`` atomically (temporary file, then rename).

    A name that exists as anything but a regular file is refused, never
    followed or replaced.
    """
    existing = _lstat(name, dir_fd)
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        raise UnsafeFile(
            path, f"is {describe(existing.st_mode)}, not a regular file: not written through"
        )
    temporary = f".{name}.{secrets.token_hex(8)}.tmp"
    try:
        fd = os.open(temporary, _NEW_FLAGS, mode, dir_fd=dir_fd)
    except OSError as error:
        raise UnsafeFile(path, f"cannot be written: {error.strerror}") from None
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        finally:
            os.close(fd)
        os.rename(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=dir_fd)
        if isinstance(error, IsADirectoryError | NotADirectoryError):
            raise UnsafeFile(path, "is a directory; refusing to replace it") from None
        raise UnsafeFile(path, f"cannot be written: {error.strerror}") from None


def remove_at(dir_fd: int, name: str) -> None:
    """Remove ``name`` from ``dir_fd`` whatever it is, never following a link (absent is fine)."""
    info = _lstat(name, dir_fd)
    if info is None:
        return
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISDIR(info.st_mode):
            shutil.rmtree(name, dir_fd=dir_fd)
        else:
            os.unlink(name, dir_fd=dir_fd)


def is_regular_at(dir_fd: int, name: str) -> bool:
    """Whether ``name`` in ``dir_fd`` is a regular file right now (a link never is)."""
    info = _lstat(name, dir_fd)
    return info is not None and stat.S_ISREG(info.st_mode)


# ------------------------------------------------------------ by folder path


def read_file(folder: Path, name: str, *, max_bytes: int) -> bytes | None:
    """The bytes of ``folder/name``; None when the file or the folder is absent."""
    try:
        with open_folder(folder) as dir_fd:
            return read_at(dir_fd, name, path=folder / name, max_bytes=max_bytes)
    except FileNotFoundError:
        return None


def write_file(folder: Path, name: str, data: bytes, *, create: bool = True) -> Path:
    """Write ``folder/name`` atomically, creating ``folder`` (mode 0700) if asked; its path."""
    with open_folder(folder, create=create) as dir_fd:
        write_at(dir_fd, name, data, path=folder / name)
    return folder / name


def open_for_reading(folder: Path, name: str) -> BinaryIO:
    """``folder/name`` opened for reading (e.g. as a child's standard input), once checked.

    The descriptor is made blocking again: it is a regular file, where that
    changes nothing, and a child reading it expects ordinary semantics.
    """
    with open_folder(folder) as dir_fd:
        fd = open_regular(dir_fd, name, path=folder / name)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def is_regular_file(folder: Path, name: str) -> bool:
    """Whether ``folder/name`` is a regular file in a real folder (no link on the way)."""
    try:
        with open_folder(folder) as dir_fd:
            return is_regular_at(dir_fd, name)
    except (FileNotFoundError, UnsafeFile):
        return False


def _too_large(path: Path, size: int, max_bytes: int) -> UnsafeFile:
    return UnsafeFile(
        path, f"file is {size} bytes, more than the limit of {max_bytes}", too_large=True
    )
