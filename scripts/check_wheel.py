"""Build the wheel and check that it holds every declared package and its data files, and that its
metadata asks for no part that only an extra needs (docs/install.md)."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).parents[1]
EXTRAS_ONLY = {"playwright", "aiosmtpd", "icalendar", "jinja2", "psycopg", "starlette", "uvicorn", "mcp"}
EXTRAS_ONLY |= {"fastmcp", "fastmcp-slim"}  # the `serve` extra: a toolkit-only install has no MCP stack
EXTRAS = {"serve", "web", "recorder", "servers", "browser", "postgresql", "demo", "all"}


def main() -> int:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    packages = config["tool"]["setuptools"]["packages"]
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--quiet",
                "--no-deps",
                "--no-build-isolation",
                "--wheel-dir",
                out,
                str(ROOT),
            ],
            check=True,
        )
        wheel = next(Path(out).glob("hatp_journal-*.whl"))
        names = set(zipfile.ZipFile(wheel).namelist())
        metadata = zipfile.ZipFile(wheel).read(f"{wheel.name.rsplit('-', 3)[0]}.dist-info/METADATA").decode()
    missing = [p for p in packages if p.replace(".", "/") + "/__init__.py" not in names]
    # Modules, and the data files [tool.setuptools.package-data] ships (the conformance manifest).
    data = ("*.py", "py.typed", "*.json", "*.html", "*.css", "*.js", "*.toml")
    sources = {
        "hatp_journal/" + str(path.relative_to(ROOT))
        for folder in ("_shared", "toolkit", "servers", "recorder", "scenarios", "conformance")
        for pattern in data
        for path in (ROOT / folder).rglob(pattern)
        if "__pycache__" not in path.parts
    }
    unpackaged = sorted(sources - names)
    if missing or unpackaged:
        print(f"wheel {wheel.name} lacks packages {missing} and files {unpackaged}", file=sys.stderr)
        return 1
    requires = [line.split(":", 1)[1] for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    toolkit = {
        re.split(r"[\s<>=!~;\[(]", line.strip(), maxsplit=1)[0].lower()
        for line in requires
        if "extra ==" not in line
    }
    extras = {
        line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Provides-Extra:")
    }
    if toolkit & EXTRAS_ONLY or not extras >= EXTRAS:
        print(
            f"wheel {wheel.name} requires {sorted(toolkit & EXTRAS_ONLY)} without an extra, "
            f"lacks extras {sorted(EXTRAS - extras)}",
            file=sys.stderr,
        )
        return 1
    print(f"wheel ok: {wheel.name}, {len(packages)} packages, {len(sources)} modules and data files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
