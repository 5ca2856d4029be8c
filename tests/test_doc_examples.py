"""Every code block marked ``<!-- example: NAME -->`` in README.md and docs/*.md is executed (or read).

Most run here: a doc's examples in the order printed, in one namespace (a later one may use what an
earlier one defined), in an empty folder, with ``tmp_path`` defined. Those that need fixtures (a browser,
a server) are run by a test of their own, named in ``RUN_ELSEWHERE``; that test must name the example.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = re.compile(r"<!-- example: ([a-z0-9-]+) -->\n(```[a-z]*)\n(.*?)```", re.S)

RUN_ELSEWHERE = {
    ("README.md", "decorator"): "tests/test_readme.py",
    ("README.md", "serve"): "tests/test_readme.py",
    ("README.md", "testing"): "tests/test_readme.py",
    ("docs/run-record.md", "verify"): "tests/recorder/record/test_record_schema.py",
    ("docs/conformance.md", "crm-hooks"): "tests/conformance/test_conformance_schema.py",
    ("docs/ui-undo.md", "ui-conftest"): "tests/servers/ui/test_ui_doc_example.py",
    ("docs/ui-undo.md", "ui-test"): "tests/servers/ui/test_ui_doc_example.py",
    ("docs/ui-undo.md", "ui-harness"): "tests/servers/ui/test_ui_doc_example.py",
    ("docs/recorder.md", "mcp-servers-stdio"): "tests/recorder/test_runs_across_processes.py",
    ("docs/recorder.md", "mcp-servers-http"): "tests/recorder/test_runs_across_processes.py",
    ("docs/policy.md", "memory-registry"): "tests/third_party/test_host_undo_of_the_knowledge_graph.py",
}


def examples(doc: Path) -> list[tuple[str, str, str]]:
    """``(name, fence, code)`` of each marked block, in the order printed."""
    return [match.groups() for match in MARKER.finditer(doc.read_text(encoding="utf-8"))]


def where(doc: Path) -> str:
    return doc.relative_to(ROOT).as_posix()


RUN_HERE = [
    pytest.param(doc, id=where(doc))
    for doc in DOCS
    if any((where(doc), name) not in RUN_ELSEWHERE for name, _, _ in examples(doc))
]


@pytest.mark.parametrize("doc", RUN_HERE)
def test_the_examples_of_the_doc_run_as_printed(
    doc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": f"doc_example_{doc.stem}", "tmp_path": tmp_path}

    for name, _, code in examples(doc):
        if (where(doc), name) not in RUN_ELSEWHERE:
            exec(compile(code, f"{where(doc)} example {name}", "exec"), namespace)


def test_every_marked_example_is_python_and_is_run_here_or_by_the_test_named_for_it() -> None:
    marked = {(where(doc), name): fence for doc in DOCS for name, fence, _ in examples(doc)}

    # Python is run; anything else (a client's JSON config) is read by the test named for it.
    assert {
        key for key, fence in marked.items() if fence != "```python" and key not in RUN_ELSEWHERE
    } == set()
    for (doc, name), test in RUN_ELSEWHERE.items():
        assert (doc, name) in marked, f"{doc} has no example {name}"
        assert re.search(rf"\b{name}\b", (ROOT / test).read_text(encoding="utf-8")), (
            f"{test} never runs {name}"
        )


def test_a_marker_whose_block_is_not_code_is_still_found() -> None:
    """A marker followed by something the pattern misses would silently run nothing: count them."""
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        assert len(re.findall(r"<!-- example: [a-z0-9-]+ -->", text)) == len(examples(doc)), (
            f"{where(doc)}: a marker not before a code block"
        )
