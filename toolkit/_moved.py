"""The toolkit's old names and module paths, kept importable for one release with a DeprecationWarning.

Until 0.1 the toolkit exported 55 names at its top and every module was public. The top now holds what
a server author writes with; the rest lives in themed modules (``toolkit.wire``, ``toolkit.signing``,
``toolkit.ui``, ``toolkit.testing``, ``toolkit.versions``, ``toolkit.errors``), the toolkit's own
modules are underscore-named, and what only other floors share moved to :mod:`hatp_journal._shared`.
An old path still imports, as the very module at its new place (so ``monkeypatch`` and ``isinstance``
see one module), after a warning that names the new place.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import warnings
from types import ModuleType

from hatp_journal._shared.lazy import lazy_exports

REMOVED_IN = "0.2"

_SHARED = "canonical clock durations text files extras lazy mail recorder_adapter pytest_postgres crashpoints"
_PRIVATE = "after_commit arguments aria cli effects fingerprint journal samples server spec testing_surface "
_PRIVATE += "tombstones undeclared undo undo_writes"

MOVED_MODULES: dict[str, str] = {
    **{f"hatp_journal.toolkit.{name}": f"hatp_journal._shared.{name}" for name in _SHARED.split()},
    **{f"hatp_journal.toolkit.{name}": f"hatp_journal.toolkit._{name}" for name in _PRIVATE.split()},
    "hatp_journal.toolkit.conflicts": "hatp_journal.toolkit.wire",
}
"""Old module path → the module that now holds its code."""

_HOMES = {
    "wire": "META_KEY CompensateRequest Declaration EffectChange EffectInfo JournalObject Money Override "
    "UndoAnswer Use canonical_bytes content_etag sha256_digest parse_wire_time utc_now wire_time "
    "format_window parse_window",
    "errors": "ErrorCode JournalError KeyFileError StoreError UndoUnverified",
    "ui": "RecordReadError RecordView read_record record_fingerprint",
    "testing": "Invocation Sample outside_edit_for sample_for",
    "signing": "VerifyKey verify_answer verify_call",
    "versions": "Summary field_changes next_revision delete_versioned restore_versioned versioned_state",
}
MOVED_NAMES: dict[str, str] = {
    name: f"hatp_journal.toolkit.{home}" for home, names in _HOMES.items() for name in names.split()
}
"""A name that left ``hatp_journal.toolkit``'s top → the public module that exports it now."""

_INTERNAL_FILES = frozenset(
    {
        __file__,
        os.path.join(os.path.dirname(__file__), "__init__.py"),
        sys.modules[lazy_exports.__module__].__file__,
    }
)


def warn_moved(old: str, new: str) -> None:
    """Warn, at the importer's line, that ``old`` is now ``new``."""
    warnings.warn(
        f"{old} moved to {new}; import it from there ({old} goes in hatp-journal {REMOVED_IN})",
        DeprecationWarning,
        stacklevel=_importer_level(),
    )


def moved_name(name: str) -> object:
    """The value of an old top-level name of the toolkit (a moved name or an old module), after a warning;
    AttributeError for a name the toolkit never had."""
    old_module = f"hatp_journal.toolkit.{name}"
    if old_module in MOVED_MODULES:
        return importlib.import_module(old_module)  # the finder below warns
    home = MOVED_NAMES.get(name)
    if home is None:
        raise AttributeError(f"module 'hatp_journal.toolkit' has no attribute {name!r}")
    warn_moved(f"hatp_journal.toolkit.{name}", f"{home}.{name}")
    return getattr(importlib.import_module(home), name)


def _importer_level() -> int:
    """How many frames up from :func:`warn_moved` the first line outside the import machinery is
    (``warnings`` itself skips the import system's bootstrap frames, so they are not counted)."""
    frame = sys._getframe(1)
    level = 1
    while frame.f_back is not None and _internal(frame.f_code.co_filename):
        frame = frame.f_back
        level += 0 if _bootstrap(frame.f_code.co_filename) else 1
    return level


def _internal(filename: str) -> bool:
    return (
        filename in _INTERNAL_FILES
        or _bootstrap(filename)
        or filename.startswith(os.path.dirname(importlib.__file__))
    )


def _bootstrap(filename: str) -> bool:
    return "importlib" in filename and "_bootstrap" in filename


class _AliasLoader(importlib.abc.Loader):
    """Loads an old path as the module at its new place, under both names."""

    def __init__(self, new: str) -> None:
        self.new = new
        self.spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warn_moved(spec.name, self.new)
        module = importlib.import_module(self.new)
        self.spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system stamped the old path's spec on the module; give it back its own.
        module.__spec__ = self.spec


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds the toolkit's old module paths (see :data:`MOVED_MODULES`)."""

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED_MODULES.get(fullname)
        return None if new is None else importlib.machinery.ModuleSpec(fullname, _AliasLoader(new))


def install_finder() -> None:
    """Put one :class:`MovedModuleFinder` first on ``sys.meta_path``."""
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedModuleFinder())
