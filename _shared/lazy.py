"""Package namespaces that import their parts on first use.

A package's ``__init__`` re-exports names from its modules for convenience; importing them all
eagerly would make every command line pay for the MCP stack, pydantic models and SQLAlchemy
before it can even print ``--help``. :func:`lazy_exports` gives the package a module
``__getattr__`` that imports the owning module when a name is first asked for. The package keeps
the same imports under ``if TYPE_CHECKING:`` so type checkers see them; a test checks both agree.
A name that is also its module's name (``policy.decide``) cannot be lazy; such a package stays eager.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping


def lazy_exports(
    package: str,
    exports: Mapping[str, Iterable[str]],
    fallback: Callable[[str], object] | None = None,
) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package`` that finds each name in the module ``exports`` lists it
    under (``{"hatp_journal._shared.clock": ["utc_now"]}``) and caches it in the package. A name not
    listed goes to ``fallback`` (old names kept for a release), else raises AttributeError."""
    owner = {name: module for module, names in exports.items() for name in names}
    shadowed = [name for name, module in owner.items() if module.rpartition(".")[2] == name]
    if shadowed:
        # Importing the module binds its name on the package, so __getattr__ would never be asked.
        raise ValueError(f"{package}: {shadowed} share a name with their module; import them eagerly")

    def __getattr__(name: str) -> object:
        module = owner.get(name)
        if module is None and fallback is not None:
            return fallback(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(importlib.import_module(package), name, value)
        return value

    return __getattr__
