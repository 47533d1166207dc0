"""The folders an assistant may reach: every path a tool is given must lie under one of them.

A path is resolved (symbolic links followed, ``..`` removed) before it is compared, so a link inside a
root that points elsewhere is refused like the place it points to.  A relative path is taken under the
first root (an assistant's working directory is not the user's).

>>> roots = Roots([Path("/srv/hptriage")])
>>> str(roots.check("2026-12-02/p5-node-01"))
'/srv/hptriage/2026-12-02/p5-node-01'
>>> roots.check("/srv/hptriage/../../etc/passwd")
Traceback (most recent call last):
...
analyzer.assistants.roots.OutsideRoots: refused: /srv/hptriage/../../etc/passwd is outside the allowed roots (/srv/hptriage); it resolves to /etc/passwd
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


class OutsideRoots(ValueError):
    """A path that resolves outside every root, or cannot be resolved at all."""


class Roots:
    def __init__(self, roots: Sequence[Path]) -> None:
        if not roots:
            raise ValueError("give at least one root folder")
        self.roots = [Path(r).expanduser().resolve() for r in roots]

    def check(self, path: str | Path) -> Path:
        """The resolved path, when it lies under a root; OutsideRoots naming it and the roots otherwise."""
        try:
            given = Path(path).expanduser()
            full = (given if given.is_absolute() else self.roots[0] / given).resolve()
        except (OSError, RuntimeError, ValueError) as exc:  # a link loop, a NUL byte, no home directory
            raise OutsideRoots(f"refused: {path!r} cannot be resolved ({exc})") from exc
        if any(full == root or full.is_relative_to(root) for root in self.roots):
            return full
        raise OutsideRoots(
            f"refused: {path} is outside the allowed roots ({', '.join(str(r) for r in self.roots)})"
            + (f"; it resolves to {full}" if str(full) != str(given) else "")
        )

    def describe(self) -> str:
        return ", ".join(str(r) for r in self.roots)
