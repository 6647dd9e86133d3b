"""Themes from YAML files, turned into Textual themes.

Strata ships ``themes/*.yaml`` (packaged into the wheel as ``workbench/themes``); users
add their own in ``<config dir>/themes``. A file names the Textual base colours and may
add ``variables`` (Strata's own tokens such as ``level-0`` or ``decision-add``) that the
TCSS reads as ``$level-0``. Every colour is checked with ``Color.parse``; a bad file is
reported and skipped, never fatal.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

import yaml
from textual.color import Color, ColorParseError
from textual.theme import Theme

import workbench

BASE_COLOURS = (
    "primary",
    "secondary",
    "accent",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
    "success",
    "warning",
    "error",
)
FALLBACK_THEME = "strata-dark"

# Tokens the workbench TCSS uses beyond Textual's own. A theme may set them under
# `variables`; otherwise (Textual's built-in themes, most user themes) they are derived
# from the theme's base colours by `token_defaults`.
LEVEL_BLEND = {0: 0.40, 1: 0.50, 2: 0.62, 3: 0.74, 4: 0.87, 5: 1.0}
DECISION_BASE = {"add": "success", "merge": "primary", "supersede": "warning", "conflict": "error"}


@dataclass(frozen=True)
class ThemeLoad:
    themes: tuple[Theme, ...]
    problems: tuple[str, ...]


def builtin_theme_dir() -> Path:
    """The packaged themes dir, or the repository's ``themes/`` in a source checkout."""
    packaged = files("workbench") / "themes"
    if packaged.is_dir():
        return Path(str(packaged))

    return Path(workbench.__file__).resolve().parent.parent / "themes"


def theme_from_mapping(data: object, where: str) -> Theme:
    """Build a Textual ``Theme`` from parsed YAML; raises ValueError naming the problem."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a mapping")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{where}: 'name' is required")
    if not isinstance(data.get("primary"), str):
        raise ValueError(f"{where}: 'primary' colour is required")
    colours: dict[str, str] = {}
    for key in BASE_COLOURS:
        value = data.get(key)
        if value is None:
            continue
        try:
            Color.parse(str(value))
        except ColorParseError as exc:
            raise ValueError(f"{where}: {key}: {value!r} is not a colour") from exc
        colours[key] = str(value)
    variables = data.get("variables") or {}
    if not isinstance(variables, dict):
        raise ValueError(f"{where}: 'variables' must be a mapping")
    clean_vars: dict[str, str] = {}
    for key, value in variables.items():
        text = str(value)
        if not text.startswith("$"):
            try:
                Color.parse(text)
            except ColorParseError as exc:
                raise ValueError(f"{where}: variables.{key}: {value!r} is not a colour") from exc
        clean_vars[str(key)] = text
    dark = data.get("dark", True)
    if not isinstance(dark, bool):
        raise ValueError(f"{where}: 'dark' must be true or false")
    return Theme(name=name.strip(), dark=dark, variables=clean_vars, **colours)


def load_theme_file(path: Path) -> Theme:

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: cannot read ({exc})") from exc
    return theme_from_mapping(data, str(path))


def load_themes(*directories: Path | None) -> ThemeLoad:
    """Every ``*.yaml``/``*.yml`` theme in the given directories, in order; later files
    with the same name replace earlier ones (a user may restyle a built-in)."""
    themes: dict[str, Theme] = {}
    problems: list[str] = []
    for directory in directories:
        if directory is None or not directory.is_dir():
            continue
        for path in sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")]):
            try:
                theme = load_theme_file(path)
            except ValueError as exc:
                problems.append(str(exc))
                continue
            themes[theme.name] = theme
    return ThemeLoad(tuple(themes.values()), tuple(problems))


def token_defaults(colours: dict[str, str]) -> dict[str, str]:
    """Strata's tokens computed from a generated colour system (``$foreground`` etc.)."""
    background = Color.parse(colours.get("background", "#000000"))
    foreground = Color.parse(colours.get("foreground", "#ffffff"))
    out = {f"level-{level}": background.blend(foreground, factor).hex for level, factor in LEVEL_BLEND.items()}
    for decision, base in DECISION_BASE.items():
        out[f"decision-{decision}"] = Color.parse(colours.get(base, colours.get("primary", "#888888"))).hex
    out["decision-ignore"] = background.blend(foreground, 0.5).hex
    return out
