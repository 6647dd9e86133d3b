"""Which database a person's `strata` command opens, and the default it remembers.

In order: ``--db``, else ``$STRATA_DB``, else the remembered default, else ``strata.db`` in the
platform data directory. The remembered default is one line, a database URL, in ``default-db`` in
the config directory (beside ``config.yaml``; ``$STRATA_CONFIG_DIR`` moves both): ``strata demo``
and ``strata db use URL`` write it, ``strata db forget`` removes it, and ``--db`` never changes it.

Only the commands a person runs read it (the workbench, and the commands that show or change what
is stored). What agents run does not: ``core.api.open_store()`` and ``strata mcp`` keep to
``--db``/``$STRATA_DB``/the built-in default, so trying the demo never moves an agent's memory.

No Textual or Rich here: the headless commands and the workbench both use it.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from core.db import ENV_VAR, default_sqlite_path, display_url, resolve_url, sqlite_path
from core.errors import InvalidInputError, StoreUnavailableError
from core.files import make_private_dirs

REMEMBERED_FILE = "default-db"

# Where a choice came from, as `strata db` names it.
FROM_OPTION = "--db"
FROM_ENV = "$STRATA_DB"
FROM_REMEMBERED = "remembered"
FROM_DEFAULT = "default"


@dataclass(frozen=True)
class Choice:
    """The database to open and what chose it (one of the ``FROM_*`` names)."""

    url: str
    source: str

    def describe(self) -> str:
        """Why this database, in a few words."""
        if self.source == FROM_OPTION:
            return "given by --db"
        if self.source == FROM_ENV:
            return "from $STRATA_DB"
        if self.source == FROM_REMEMBERED:
            return f"the remembered default ({remembered_path()})"
        return "the built-in default"


def remembered_path() -> Path:
    # start-up time: the config module (YAML) loads when a command looks for the remembered default
    from workbench.config import config_dir

    return config_dir() / REMEMBERED_FILE


def remembered_url() -> str | None:
    """The remembered default's URL; None when there is none."""
    path = remembered_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(
            f"{path}: cannot read the remembered database ({exc}); `strata db forget` removes it"
        ) from exc
    lines = text.strip().splitlines()
    return (lines[0].strip() or None) if lines else None


def builtin_url() -> str:
    return f"sqlite:///{default_sqlite_path()}"


def choose(db: str | None) -> Choice:
    """The database a person's command opens: ``db`` (``--db``), else ``$STRATA_DB``, else the
    remembered default, else the built-in one."""
    if db is not None:
        return Choice(resolve_url(db), FROM_OPTION)  # resolve_url refuses a blank one
    env = os.environ.get(ENV_VAR)
    if env:
        return Choice(env, FROM_ENV)
    remembered = remembered_url()
    if remembered:
        return Choice(remembered, FROM_REMEMBERED)
    return Choice(builtin_url(), FROM_DEFAULT)


def require_remembered(choice: Choice) -> None:
    """A remembered SQLite database that is gone is refused, never made again empty: it was most
    likely a demo removed since, and an empty store there would answer "nothing found"."""
    if choice.source != FROM_REMEMBERED:
        return
    path = sqlite_path(choice.url)
    if path is not None and not path.is_file():
        raise StoreUnavailableError(
            f"no Strata database at {path}, the remembered default ({remembered_path()}): "
            "`strata demo` builds the demo again, `strata db use URL` chooses another database, "
            "`strata db forget` goes back to the built-in default"
        )


def absolute_url(url: str) -> str:
    """``url`` with a SQLite path made absolute, so that it names the same file from any directory."""
    path = sqlite_path(url)
    if path is None:
        return url
    return f"sqlite:///{os.path.abspath(path)}"


def remember(url: str) -> str:
    """Make ``url`` the remembered default (private to the user: a server URL may hold a password);
    returns what was written."""
    url = absolute_url(url)
    path = remembered_path()
    make_private_dirs(path.parent)
    partial = path.with_name(f".{path.name}.partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(url + "\n")
    os.replace(partial, path)
    return url


def forget() -> bool:
    """Remove the remembered default; False when there was none."""
    try:
        remembered_path().unlink()
    except FileNotFoundError:
        return False
    return True


def demo_db_path() -> Path:
    """Where `strata demo` (and the workbench's offer on an empty store) builds the demo."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("strata", appauthor=False)) / "demo.db"


def short_name(url: str | None) -> str:
    """A database as a header shows it: a SQLite file's name, a server's ``host/database``."""
    if not url:
        return "…"
    try:
        path = sqlite_path(url)
    except InvalidInputError:  # sqlite://name: refused when opened; shown as given
        return display_url(url)
    if path is not None:
        return path.name or str(path)
    if "://" not in url:
        return url
    parts = urlparse(url)
    name = parts.path.lstrip("/")
    return f"{parts.hostname or 'localhost'}/{name}" if name else display_url(url)


def strata_command() -> list[str]:
    """The words that run this `strata` from a fresh shell, where the virtual environment is not
    active: its `strata` script by absolute path, else this Python with ``-m workbench``."""
    # Not resolved: a virtual environment's python is a link to the base interpreter, outside it.
    bindir = Path(os.path.abspath(sys.executable)).parent
    for name in ("strata", "strata.exe"):
        script = bindir / name
        if script.is_file() and os.access(script, os.X_OK):
            return [str(script)]
    return [os.path.abspath(sys.executable), "-m", "workbench"]


def shell_lines(url: str, *args: str) -> list[str]:
    """Shell lines that open ``url`` from a fresh shell: the export, then the command."""
    return [f"export {ENV_VAR}={shlex.quote(url)}", shlex.join([*strata_command(), *args])]
