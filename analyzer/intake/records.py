"""What intake says about inputs it did not read, as typed records (``as_dict()`` is their JSON form).

>>> UnreadInput("n2.tar.gz!../x.txt", "member refused: unsafe name").as_dict()
{'path': 'n2.tar.gz!../x.txt', 'reason': 'member refused: unsafe name'}
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UnreadInput:
    """An input, or a member of one, that was not read: the path as the user gave it
    (``bundle.tar.gz!member`` for a member of a tarball) and why.  It makes the verdict incomplete and
    ``analyze`` exit 5: a loose file beside the bundles, a file no parser recognises, a node bundle
    without meta.env (read all the same) are unread inputs as much as a refused member."""

    path: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason}
