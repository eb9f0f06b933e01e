"""What the tool may read in a folder it was given: a link is never followed out of that folder.

One rule for every reader of a user's or a hub's folder (an image folder, a local model folder, a model card): an
entry counts as the folder's when its real path (links followed) lies inside the folder's real path; a link that
leads out is at most a name, its target never read.
"""

from __future__ import annotations

import os
from pathlib import Path


def real_inside(path: str | Path, root: str | Path) -> Path | None:
    """The real path of ``path`` (every link followed) when it is ``root``'s real path or lies inside it; None when
    it leads out of ``root`` (``path`` need not exist: a dangling link inside the folder gives its would-be target)."""
    real = Path(os.path.realpath(path))
    top = Path(os.path.realpath(root))
    return real if real == top or real.is_relative_to(top) else None
