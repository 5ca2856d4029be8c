"""Seed 004's task list as a server that knows nothing of undo: FastMCP over a SQLite file.

No journal objects, no keys, no version numbers: only tools. The host registry
``tasks_registry.json`` next to it tells the Recorder how to undo its calls.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from fastmcp import FastMCP
from fastmcp.exceptions import ToolError

STATUSES = ("open", "completed")


def tasks_server(db: Path) -> FastMCP:
    """The task list kept in ``db`` (created on first use)."""
    mcp = FastMCP("tasks")
    with sqlite3.connect(db) as connection:
        connection.execute(
            "CREATE TABLE IF NOT EXISTS task (id INTEGER PRIMARY KEY, title TEXT, status TEXT)"
        )

    def one(connection: sqlite3.Connection, task_id: int) -> dict[str, Any] | None:
        row = connection.execute("SELECT id, title, status FROM task WHERE id = ?", (task_id,)).fetchone()
        return None if row is None else {"id": row[0], "title": row[1], "status": row[2]}

    def existing(connection: sqlite3.Connection, task_id: int) -> dict[str, Any]:
        task = one(connection, task_id)
        if task is None:
            raise ToolError(f"there is no task {task_id}")
        return task

    @mcp.tool
    def add_task(title: str) -> dict[str, Any]:
        """Add an open task."""
        with sqlite3.connect(db) as connection:
            cursor = connection.execute("INSERT INTO task (title, status) VALUES (?, 'open')", (title,))
            return existing(connection, int(cursor.lastrowid or 0))

    @mcp.tool
    def complete_task(id: int) -> dict[str, Any]:
        """Mark a task completed."""
        with sqlite3.connect(db) as connection:
            existing(connection, id)
            connection.execute("UPDATE task SET status = 'completed' WHERE id = ?", (id,))
            return existing(connection, id)

    @mcp.tool
    def reopen_task(id: int) -> dict[str, Any]:
        """Mark a task open again."""
        with sqlite3.connect(db) as connection:
            existing(connection, id)
            connection.execute("UPDATE task SET status = 'open' WHERE id = ?", (id,))
            return existing(connection, id)

    @mcp.tool
    def delete_task(id: int) -> dict[str, Any]:
        """Delete a task for good."""
        with sqlite3.connect(db) as connection:
            existing(connection, id)
            connection.execute("DELETE FROM task WHERE id = ?", (id,))
            return {"id": id, "deleted": True}

    @mcp.tool
    def restore_task(id: int, title: str, status: str) -> dict[str, Any]:
        """Put a deleted task back under its old id."""
        if status not in STATUSES:
            raise ToolError(f"status must be one of {', '.join(STATUSES)}, not {status!r}")
        with sqlite3.connect(db) as connection:
            if one(connection, id) is not None:
                raise ToolError(f"task {id} exists")
            connection.execute("INSERT INTO task (id, title, status) VALUES (?, ?, ?)", (id, title, status))
            return existing(connection, id)

    @mcp.tool
    def get_task(id: int) -> dict[str, Any]:
        """One task, or null when there is none."""
        with sqlite3.connect(db) as connection:
            return {"task": one(connection, id)}

    @mcp.tool
    def list_tasks() -> dict[str, Any]:
        """Every task."""
        with sqlite3.connect(db) as connection:
            ids = [row[0] for row in connection.execute("SELECT id FROM task ORDER BY id")]
            return {"tasks": [one(connection, i) for i in ids]}

    return mcp
