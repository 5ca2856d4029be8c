"""Errors of the policy package: a policy file that cannot be used names its file and line."""

from __future__ import annotations

from pathlib import Path

from hatp_journal.recorder.file_places.problems import Problem


class PolicyFileError(ValueError):
    """A policy file is unreadable, not JSON, or not a valid policy. The Recorder refuses to start.

    ``str()`` reads like a compiler message, ``file:line:column: message``, one line per problem,
    earliest first; ``line``/``column``/``message`` are those of the first problem.
    """

    def __init__(self, path: str | Path, problems: list[Problem]) -> None:
        ordered = sorted(problems, key=lambda problem: (problem.line, problem.column)) or [
            Problem(1, 1, "invalid policy")
        ]
        self.path = str(path)
        self.problems = tuple(ordered)
        self.line = ordered[0].line
        self.column = ordered[0].column
        self.message = ordered[0].message
        lines = [f"{self.path}:{problem.line}:{problem.column}: {problem.message}" for problem in ordered]
        super().__init__("\n".join(lines))
