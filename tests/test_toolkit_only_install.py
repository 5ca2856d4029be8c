"""`pip install hatp-journal` without extras, in a fresh virtual environment: the toolkit alone.

One wheel and one environment for the whole file. Packages come from the wheelhouse `make setup`
downloads into `.venv/wheels` (hash-checked against requirements.lock), so nothing is fetched here;
without it, pip fetches the locked versions as `make setup` would.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hatp_journal._shared.extras import MISSING_EXTRA, install_hint

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[1]
WHEELHOUSE = ROOT / ".venv" / "wheels"
EXTRAS_ONLY = ("playwright", "aiosmtpd", "icalendar", "jinja2", "psycopg", "psycopg-binary")
"""What only the extras bring (browser, servers, web, postgresql)."""
THE_MCP_STACK = ("fastmcp", "fastmcp-slim", "mcp", "starlette", "uvicorn", "httpx2")
"""What only the `serve` extra brings: FastMCP and the MCP SDK, which requires starlette and uvicorn."""

NOT_PASSED_ON = ("VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")
"""This environment's settings a user's shell would not have for the fresh one."""

README_EXAMPLES = """
import re, sys
from pathlib import Path

readme = Path(sys.argv[1]).read_text(encoding="utf-8")
def example(name):
    return re.search(rf"<!-- example: {name} -->\\n```python\\n(.*?)```", readme, re.S).group(1)

namespace = {"__name__": "readme_example"}
exec(compile(example("decorator"), "README.md", "exec"), namespace)
exec(compile(example("testing"), "README.md", "exec"), {**namespace, "tmp_path": Path.cwd()})
try:
    exec(compile(example("serve"), "README.md", "exec"), namespace)
except ModuleNotFoundError as error:
    print(error.name)
"""
"""The README's tools and its testing example, then its serve block, which needs the `serve` extra."""


def installed(python: Path) -> dict[str, list[str]]:
    """Each distribution installed for ``python`` (lower-case name) → its Requires-Dist lines."""
    script = (
        "import importlib.metadata as m, json\n"
        "print(json.dumps({d.metadata['Name'].lower(): d.requires or [] for d in m.distributions()}))"
    )
    return json.loads(subprocess.run([python, "-c", script], check=True, capture_output=True).stdout)


def locked_versions() -> str:
    """requirements.lock without its hashes: pins for a pip that may fetch."""
    lock = (ROOT / "requirements.lock").read_text(encoding="utf-8")
    return "\n".join(re.findall(r"^[A-Za-z0-9_.-]+==[^ \\\n]+", lock, re.M)) + "\n"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh environment with the built wheel installed, no extras: its ``bin`` folder."""
    folder = tmp_path_factory.mktemp("toolkit-only")
    pip = [sys.executable, "-m", "pip"]
    build = ["wheel", "--quiet", "--no-deps", "--no-build-isolation", "--wheel-dir", str(folder), str(ROOT)]
    subprocess.run([*pip, *build], check=True, capture_output=True)
    wheel = next(folder.glob("hatp_journal-*.whl"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", folder / "venv"], check=True)
    if WHEELHOUSE.is_dir():
        source = ["--no-index", "--find-links", str(WHEELHOUSE)]
    else:
        (folder / "locked.txt").write_text(locked_versions(), encoding="utf-8")
        source = ["--constraint", str(folder / "locked.txt")]
    python = folder / "venv" / "bin" / "python"
    install = ["--python", str(python), "install", "--quiet", "--no-compile", *source, str(wheel)]
    subprocess.run([*pip, *install], check=True, capture_output=True)
    return python.parent


def run(venv: Path, *command: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A console script of the fresh environment, as a user would start it (stdin closed)."""
    # Nothing is compiled at install (--no-compile): the first command to import a module caches its
    # bytecode in the throwaway environment and the later ones reuse it, unless it may not be written.
    environment = {key: value for key, value in os.environ.items() if key not in NOT_PASSED_ON}
    environment["PATH"] = f"{venv}{os.pathsep}{environment.get('PATH', '')}"
    return subprocess.run(
        [venv / command[0], *command[1:]],
        cwd=cwd,
        env=environment,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_toolkit_only_install_brings_no_part_that_only_an_extra_needs(venv: Path) -> None:
    names = set(installed(venv / "python"))

    assert "hatp-journal" in names
    assert sorted(names & {*EXTRAS_ONLY, *THE_MCP_STACK}) == []


def test_the_readme_tools_run_in_a_toolkit_only_install_and_serving_them_needs_the_serve_extra(
    venv: Path, tmp_path: Path
) -> None:
    (tmp_path / "examples.py").write_text(README_EXAMPLES, encoding="utf-8")

    result = run(venv, "python", "examples.py", ROOT / "README.md", cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    assert (tmp_path / "crm.key").exists()
    assert (tmp_path / "t.db").exists()  # the testing example called update_deal and undid it
    assert result.stdout.split() == ["fastmcp"]


def test_the_toolkit_and_suite_commands_start_without_any_extra(venv: Path, tmp_path: Path) -> None:
    for command in ("hatp-journal", "hatp-conformance", "hatp-recorder", "hatp-demo"):
        assert run(venv, command, "--help", cwd=tmp_path).returncode == 0, command


def test_each_command_of_a_missing_extra_says_which_extra_to_install(venv: Path, tmp_path: Path) -> None:
    (tmp_path / "recorder.toml").write_text(
        '[recorder]\nstore = "recorder.db"\nkey = "recorder.key"\n[servers.crm]\ncommand = "hatp-crm"\n',
        encoding="utf-8",
    )
    key = ["--key", "server.key"]
    commands = {
        "serve": [
            ["hatp-crm", "serve", "--db", "crm.db", *key],
            ["hatp-recorder", "serve"],
            ["hatp-conformance", "--target", "hatp-crm serve --db crm.db --key server.key"],
        ],
        "servers": [
            ["hatp-mailsink", "serve", "--dir", "mail"],
            ["hatp-calendar", "serve", "--db", "calendar.db", *key],
        ],
        "browser": [["hatp-ui", "serve", "--app-url", "http://127.0.0.1:9/", "--db", "ui.db", *key]],
        "web": [["hatp-recorder", "web", "--port", "0"]],
        "demo": [["hatp-demo", "d881"]],
    }

    for extra, lines in commands.items():
        for line in lines:
            result = run(venv, *line, cwd=tmp_path)

            assert (result.returncode, MISSING_EXTRA) == (2, result.stderr.split(": ")[1]), result.stderr
            assert install_hint(extra) in result.stderr, line


def test_a_postgresql_store_without_its_extra_is_refused_naming_the_extra(venv: Path, tmp_path: Path) -> None:
    (tmp_path / "recorder.toml").write_text(
        '[recorder]\nstore = "postgresql://journal@127.0.0.1:9/journal"\nkey = "recorder.key"\n'
        '[servers.crm]\ncommand = "hatp-crm"\n',
        encoding="utf-8",
    )

    result = run(venv, "hatp-recorder", "runs", cwd=tmp_path)  # reads the record without the MCP stack

    assert (result.returncode, result.stderr.split(": ")[1]) == (2, "STORE_BAD_URL"), result.stderr
    assert install_hint("postgresql") in result.stderr
