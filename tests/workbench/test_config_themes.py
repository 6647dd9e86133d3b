"""Config and theme loading without starting the app."""

from __future__ import annotations

from workbench.config import Config, load_config, save_config
from workbench.themes import builtin_theme_dir, load_themes, token_defaults


def test_config_round_trip_and_problems(tmp_path):
    path = tmp_path / "config.yaml"
    assert load_config(path) == Config(path=path)
    path.write_text(
        "theme: nord\nnamespace: work\nstart_screen: timeline\nkeymap:\n  app.quit: ctrl+q\ncolour: red\n",
        encoding="utf-8",
    )
    config = load_config(path)
    assert (config.theme, config.namespace, config.start_screen) == ("nord", "work", "timeline")
    assert config.keymap == {"app.quit": "ctrl+q"}
    assert any("unknown settings" in p for p in config.problems)
    save_config(config.with_theme("strata-light"))
    again = load_config(path)
    assert again.theme == "strata-light" and again.keymap == {"app.quit": "ctrl+q"}
    path.write_text("start_screen: nowhere\nkeymap: [1, 2]\n", encoding="utf-8")
    bad = load_config(path)
    assert bad.start_screen == "blocks" and len(bad.problems) == 2
    path.write_text(": : :\n", encoding="utf-8")
    assert load_config(path).problems


def test_builtin_and_user_themes(tmp_path):
    loaded = load_themes(builtin_theme_dir())
    names = {t.name for t in loaded.themes}
    assert {"strata-dark", "strata-light"} <= names and not loaded.problems
    dark = next(t for t in loaded.themes if t.name == "strata-dark")
    assert dark.dark and dark.variables["decision-add"]
    (tmp_path / "strata-dark.yaml").write_text("name: strata-dark\nprimary: '#123456'\n", encoding="utf-8")
    (tmp_path / "bad.yml").write_text("name: bad\nprimary: '#12'\nvariables: {level-0: nope}\n", encoding="utf-8")
    merged = load_themes(builtin_theme_dir(), tmp_path)
    assert next(t for t in merged.themes if t.name == "strata-dark").primary == "#123456"
    assert len(merged.problems) == 1 and "bad.yml" in merged.problems[0]
    tokens = token_defaults(
        {"background": "#000000", "foreground": "#ffffff", "success": "#00ff00", "primary": "#0000ff"}
    )
    assert tokens["level-5"] == "#FFFFFF" and tokens["decision-add"] == "#00FF00"
    assert set(tokens) >= {f"level-{i}" for i in range(6)} | {"decision-ignore"}
