"""The workbench's YAML configuration: theme, keymap, default namespace and start screen.

The file lives in the platform config dir (``$STRATA_CONFIG_DIR`` overrides it) as
``config.yaml``; user themes sit next to it in ``themes/*.yaml``. Every key is optional,
and a broken file never stops the workbench: problems are collected and shown once.

Example::

    theme: strata-light
    namespace: demo
    start_screen: timeline
    keymap:
      app.quit: ctrl+q
      timeline.source-block: o
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from platformdirs import user_config_dir

from workbench.views import VIEW_IDS

CONFIG_ENV = "STRATA_CONFIG_DIR"
CONFIG_FILE = "config.yaml"


def config_dir() -> Path:
    """Where config.yaml and the user themes live."""
    chosen = os.environ.get(CONFIG_ENV)
    if chosen:
        return Path(chosen).expanduser()

    return Path(user_config_dir("strata", appauthor=False))


def config_path() -> Path:
    return config_dir() / CONFIG_FILE


def user_theme_dir() -> Path:
    return config_dir() / "themes"


@dataclass(frozen=True)
class Config:
    """Settings read from config.yaml. ``path`` None means nothing is ever written."""

    theme: str = "strata-dark"
    namespace: str | None = None
    start_screen: str = "blocks"
    keymap: dict[str, str] = field(default_factory=dict)
    path: Path | None = None
    problems: tuple[str, ...] = ()

    def with_theme(self, theme: str) -> "Config":
        return replace(self, theme=theme)


def load_config(path: Path | None = None) -> Config:
    """Read the config file (the default location when ``path`` is None).

    A missing file gives the defaults; a malformed one gives the defaults plus a
    description of what was wrong in ``problems``.
    """

    path = path or config_path()
    if not path.exists():
        return Config(path=path)
    problems: list[str] = []
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        return Config(path=path, problems=(f"{path}: cannot read ({exc})",))
    if not isinstance(data, dict):
        return Config(path=path, problems=(f"{path}: expected a mapping of settings",))
    values: dict = {}
    for key in ("theme", "namespace", "start_screen"):
        value = data.get(key)
        if value is None:
            continue
        if not isinstance(value, str) or not value.strip():
            problems.append(f"{path}: {key} must be a non-empty string")
            continue
        values[key] = value.strip()
    if values.get("start_screen") and values["start_screen"] not in VIEW_IDS:
        problems.append(f"{path}: start_screen must be one of {', '.join(VIEW_IDS)}")
        values.pop("start_screen")
    keymap = data.get("keymap") or {}
    if not isinstance(keymap, dict):
        problems.append(f"{path}: keymap must map binding ids to keys")
        keymap = {}
    clean: dict[str, str] = {}
    for binding_id, keys in keymap.items():
        if not isinstance(binding_id, str) or not isinstance(keys, str) or not keys.strip():
            problems.append(f"{path}: keymap entry {binding_id!r} must be 'binding.id: keys'")
            continue
        clean[binding_id] = keys.strip()
    unknown = set(data) - {"theme", "namespace", "start_screen", "keymap"}
    if unknown:
        problems.append(f"{path}: unknown settings ignored: {', '.join(sorted(map(str, unknown)))}")
    return Config(keymap=clean, path=path, problems=tuple(problems), **values)


def save_config(config: Config) -> None:
    """Write the settings back (keeps the keymap; no-op for a config without a path)."""

    if config.path is None:
        return
    data: dict = {"theme": config.theme}
    if config.namespace:
        data["namespace"] = config.namespace
    if config.start_screen != "blocks":
        data["start_screen"] = config.start_screen
    if config.keymap:
        data["keymap"] = dict(config.keymap)
    config.path.parent.mkdir(parents=True, exist_ok=True)
    config.path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
