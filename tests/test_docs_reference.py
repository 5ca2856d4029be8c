"""Every command-line flag and every configuration key is in the docs: the programs' own argument
parsers and the configuration models are read, so a flag or key added without its line here fails."""

from __future__ import annotations

import argparse
import importlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from hatp_journal.recorder.config import MailSection, RecorderSection, ServerConfig, WebSection, WitnessConfig
from hatp_journal.recorder.directory import Directory, Person

DOCS = Path(__file__).parents[1] / "docs"

PROGRAMS = {
    "hatp-journal": "hatp_journal.toolkit._cli",
    "hatp-recorder": "hatp_journal.recorder.cli.command_line",
    "hatp-conformance": "hatp_journal.conformance.cli",
    "hatp-demo": "hatp_journal.scenarios.cli",
    "hatp-crm": "hatp_journal.servers.crm.cli",
    "hatp-calendar": "hatp_journal.servers.calendar.cli",
    "hatp-email": "hatp_journal.servers.email.cli",
    "hatp-mailsink": "hatp_journal.servers.mailsink.cli",
    "hatp-fakeapp": "hatp_journal.servers.fakeapp.cli",
    "hatp-ui": "hatp_journal.servers.ui.cli",
    "hatp-witness": "hatp_journal.recorder.witness.cli",
}


class _Parsed(Exception):
    """Carries the parser a program built, instead of letting it parse."""


def parser_of(module: str, monkeypatch: pytest.MonkeyPatch) -> argparse.ArgumentParser:
    """The parser ``main`` builds, caught as it starts parsing (some programs build it inside ``main``)."""

    def caught(parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        raise _Parsed(parser)

    with monkeypatch.context() as patch:
        patch.setattr(argparse.ArgumentParser, "parse_args", caught)
        with pytest.raises(_Parsed) as parsed:
            importlib.import_module(module).main([])
    parser = parsed.value.args[0]
    assert isinstance(parser, argparse.ArgumentParser)
    return parser


def commands(parser: argparse.ArgumentParser, name: str) -> Iterator[tuple[str, list[str]]]:
    """``("hatp-recorder serve", ["--transport", "--host", "--port"])``: the program, each subcommand."""
    arguments = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, subparser in action.choices.items():
                yield from commands(subparser, f"{name} {sub}")
        elif not isinstance(action, argparse._HelpAction):
            arguments.extend(action.option_strings or [action.dest])
    yield name, arguments


def section(text: str, heading: str) -> str:
    """The text under ``heading`` up to the next heading of any level."""
    match = re.search(rf"^#+ {re.escape(heading)}\n(.*?)(?=^#|\Z)", text, re.S | re.M)
    assert match, f"no section {heading!r}"
    return match.group(1)


@pytest.mark.parametrize(("program", "module"), PROGRAMS.items())
def test_every_subcommand_and_flag_of_the_program_is_in_the_command_reference(
    program: str, module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = (DOCS / "cli.md").read_text(encoding="utf-8")

    missing = []
    for command, arguments in commands(parser_of(module, monkeypatch), program):
        if command == program and not arguments:
            continue  # a program that only has subcommands
        found = re.search(rf"^#+ `{re.escape(command)}`\n(.*?)(?=^#|\Z)", reference, re.S | re.M)
        if found is None:
            missing.append(command)
            continue
        missing.extend(f"{command} {a}" for a in arguments if f"`{a}`" not in found.group(1))

    assert not missing, f"docs/cli.md lacks: {', '.join(missing)}"


def keys(model: type[BaseModel]) -> list[str]:
    """The keys a file uses for the model's fields (the alias where there is one)."""
    return [field.alias or name for name, field in model.model_fields.items()]


@pytest.mark.parametrize(
    ("heading", "model"),
    [
        ("`[recorder]`", RecorderSection),
        ("`[servers.NAME]`", ServerConfig),
        ("`[web]`", WebSection),
        ("`[mail]`", MailSection),
        ("`[[witnesses]]`", WitnessConfig),
    ],
)
def test_every_key_of_recorder_toml_is_in_the_configuration_reference(
    heading: str, model: type[BaseModel]
) -> None:
    text = section((DOCS / "configuration.md").read_text(encoding="utf-8"), heading)

    assert [key for key in keys(model) if f"| `{key}` |" not in text] == []


def test_every_key_of_the_directory_file_is_in_the_configuration_reference() -> None:
    text = section((DOCS / "configuration.md").read_text(encoding="utf-8"), "The directory file")

    documented = keys(Directory) + keys(Person)
    assert [key for key in documented if f"| `{key}` |" not in text] == []


def test_a_flag_missing_from_the_reference_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above can fail: a parser with a flag no doc names is caught by it."""
    parser = argparse.ArgumentParser(prog="hatp-recorder")
    parser.add_argument("--no-such-flag-documented")
    [(_, arguments)] = commands(parser, "hatp-recorder")

    assert "`--no-such-flag-documented`" not in (DOCS / "cli.md").read_text(encoding="utf-8")
    assert arguments == ["--no-such-flag-documented"]


SKIPPED = {"node_modules", "build", "__pycache__"}
FOREIGN_CITATION = "SPEC" + " §"  # spelled in two parts so this file does not cite it


def test_code_and_docs_cite_the_projects_own_protocol_and_every_cited_section_exists() -> None:
    root = DOCS.parent
    protocol = (DOCS / "protocol.md").read_text(encoding="utf-8")
    sources = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [name for name in subfolders if name not in SKIPPED and not name.startswith(".")]
        sources.extend(
            Path(folder) / name for name in files if name.endswith((".py", ".md", ".toml", ".json"))
        )

    foreign, missing = [], []
    for path in sources:
        text = path.read_text(encoding="utf-8", errors="replace")
        if FOREIGN_CITATION in text:
            foreign.append(str(path.relative_to(root)))
        for section in re.findall(r"protocol\.md §(\d+)", text):
            if f'<a id="s{section}"></a>' not in protocol:
                missing.append(f"{path.relative_to(root)}: §{section}")

    assert foreign == []
    assert missing == []


def anchors(page: Path) -> set[str]:
    """The anchors a page offers: GitHub's slugs of its headings, and explicit ``<a id>``s."""
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # a "# comment" in a code block is no heading
    slugs = set(re.findall(r'<a id="([^"]+)"></a>', text))
    for heading in re.findall(r"^#+ (.+)$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        slugs.add(slug)
    return slugs


def test_every_relative_link_of_the_docs_leads_to_a_file_and_heading_that_exist() -> None:
    pages = [DOCS.parent / "README.md", *sorted(DOCS.glob("*.md"))]

    broken = []
    for page in pages:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.name}: {target}")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                broken.append(f"{page.name}: {target} (no such heading)")

    assert broken == []
