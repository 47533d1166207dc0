"""What intake says about inputs it did not read, as typed records (``as_dict()`` is their JSON form).

>>> UnreadInput("n2.tar.gz!../x.txt", "member refused: unsafe name").as_dict()
{'path': 'n2.tar.gz!../x.txt', 'reason': 'member refused: unsafe name'}
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UnreadInput:
    """An input, or a member of one, that was not read: the path as the user gave it
    (``bundle.tar.gz!member`` for a member of a tarball) and why.  It makes the verdict incomplete."""

    path: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason}


@dataclass(frozen=True)
class IgnoredFile:
    """A loose file beside the bundles that is no bundle (a README), not read: accounted for, but no
    unread input (the verdict stays complete)."""

    path: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason}
