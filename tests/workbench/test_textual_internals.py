"""workbench.textual_internals holds every use of Textual's private API: it names the Textual
version it was read against, and every private name it uses must still exist there."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest
import textual

import workbench
from workbench import textual_internals
from workbench.textual_internals import RELIED_ON, TEXTUAL_VERSION


def test_checked_against_the_installed_textual():
    assert textual.__version__ == TEXTUAL_VERSION, (
        f"Textual {textual.__version__} is installed; workbench/textual_internals.py was checked against "
        f"{TEXTUAL_VERSION}: read each function there against the new source, then update TEXTUAL_VERSION"
    )


def _instance(cls: type):
    from textual.app import App

    # Some private names are only set in __init__; constructing these needs no running app.
    return cls() if issubclass(cls, App) or cls.__name__ in ("Screen", "DataTable", "Footer", "Input") else None


def _set_in_init(cls: type, attr: str) -> bool:
    """Whether ``cls.__init__`` sets ``attr`` (a class not built here, such as a terminal driver)."""
    try:
        source = inspect.getsource(cls.__init__)
    except (OSError, TypeError):
        return False
    return f"self.{attr} " in source or f"self.{attr}:" in source


@pytest.mark.parametrize("where", sorted(RELIED_ON))
def test_the_private_names_relied_on_still_exist(where):
    module, name = where.split(":")
    cls = getattr(importlib.import_module(module), name)
    instance = _instance(cls)
    missing = [
        attr
        for attr in RELIED_ON[where]
        if not hasattr(cls, attr) and not hasattr(instance, attr) and not _set_in_init(cls, attr)
    ]
    assert not missing, f"{where} no longer has {missing}: see workbench/textual_internals.py"


def _private_names_used(path: Path) -> set[str]:
    """``x._name`` attributes read or written, and ``_name`` methods defined (overrides, if a base
    class has them), in one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
    }
    for cls in (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)):
        names |= {
            item.name
            for item in cls.body
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
            and item.name.startswith("_")
            and not item.name.startswith("__")
        }
    return names


def _imports_textual(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "textual":
            return True
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "textual" for a in node.names):
            return True
    return False


def _textual_private_names() -> set[str]:
    """The private names of the Textual objects the workbench builds on (instances: some are set
    in ``__init__``)."""
    from textual.app import App
    from textual.command import Provider
    from textual.screen import ModalScreen, Screen
    from textual.widget import Widget
    from textual.widgets import (
        Button,
        DataTable,
        Footer,
        Input,
        Label,
        OptionList,
        Select,
        Sparkline,
        Static,
        TabbedContent,
    )

    objects = [
        App(),
        Screen(),
        ModalScreen(),
        Widget(),
        DataTable(),
        Footer(),
        Input(),
        OptionList(),
        Select([]),
        Static(),
        Label(),
        TabbedContent(),
        Sparkline(),
        Button(),
        Provider,
    ]
    return {name for obj in objects for name in dir(obj) if name.startswith("_") and not name.startswith("__")}


def test_the_module_lists_every_private_name_it_uses():
    listed = {attr for attrs in RELIED_ON.values() for attr in attrs}
    used = _private_names_used(Path(textual_internals.__file__)) & _textual_private_names()
    assert used <= listed


def test_no_other_workbench_module_uses_a_private_textual_name():
    """A private Textual name used (or overridden) elsewhere in the workbench belongs in
    textual_internals, behind a function or mixin with a name that says what it does."""
    private = _textual_private_names()
    root = Path(workbench.__file__).parent
    offenders = {}
    for path in sorted(root.rglob("*.py")):
        if path.name == "textual_internals.py" or not _imports_textual(path):
            continue
        hits = _private_names_used(path) & private
        if hits:
            offenders[str(path.relative_to(root))] = sorted(hits)
    assert offenders == {}
