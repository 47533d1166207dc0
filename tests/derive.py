"""Derived texts: a real fixture as launchers and pastes carry it (tests label what they build "derived")."""

from __future__ import annotations


def srun(text: str, rank: int = 0) -> str:
    """Every line as ``srun -l`` prints it."""
    return "".join(f"{rank}: {line}\n" for line in text.splitlines())


def pdsh(text: str, host: str) -> str:
    """Every line as pdsh / clush prints it."""
    return "".join(f"{host}: {line}\n" for line in text.splitlines())


def crlf(text: str) -> str:
    """Windows line ends."""
    return text.replace("\n", "\r\n")
