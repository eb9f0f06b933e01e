"""The one rule for what to do when the file system refuses a write for want of room: a full disk (ENOSPC), a full
quota (EDQUOT), a file-size limit (EFBIG: ``ulimit -f``, or the file system's largest file), or a short write whose
cause the system did not say. The cache's write failures (:mod:`embedselect.store.write_failure`) and the output
files (:func:`embedselect._fs.outfile.os_reason`) both say it."""

from __future__ import annotations

import errno

NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
"""The errno values of a write refused for want of room."""


def room_remedy(code: int | None, *, unsaid: bool = False) -> str | None:
    """What to do about a write refused with errno ``code`` for want of room (:data:`NO_ROOM`), or about a short write
    whose cause the system did not say (``unsaid``): a file-size limit may be the cause of either, so both name it.
    None for any other error."""
    if code == errno.EFBIG or unsaid:
        return "free disk space or raise the file-size limit (ulimit -f)"
    if code == errno.EDQUOT:
        return "free space in your quota"
    if code == errno.ENOSPC:
        return "free disk space"
    return None


__all__ = ["NO_ROOM", "room_remedy"]
