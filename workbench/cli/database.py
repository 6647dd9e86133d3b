"""`strata db`: which database `strata` opens, and choosing the one it opens by default.

`strata db` names the database and what chose it (``--db``, ``$STRATA_DB``, the remembered
default or the built-in one); `strata db use URL` remembers another, `strata db forget` goes back
to the built-in default. See ``workbench.database``.
"""

from __future__ import annotations

import argparse
import os
from types import SimpleNamespace

from core.db import ENV_VAR, display_url
from core.errors import InvalidInputError
from workbench.cli.output import console, err_console, open_from_args, print_json

SAY = {"markup": False, "highlight": False, "soft_wrap": True}


def cmd_db(args: argparse.Namespace) -> int:
    from workbench.database import builtin_url, choose, remembered_path, remembered_url

    choice = choose(getattr(args, "db", None))
    remembered = remembered_url()
    if args.json:
        print_json(
            {
                "url": display_url(choice.url),
                "source": choice.source,
                "remembered": display_url(remembered) if remembered else None,
                "remembered_file": str(remembered_path()),
                "builtin": builtin_url(),
            }
        )
        return 0
    console.print(f"database: {display_url(choice.url)}\n  {choice.describe()}", **SAY)
    if remembered and choice.url != remembered:
        console.print(
            f"remembered default: {display_url(remembered)} (used when neither --db nor ${ENV_VAR} is given)", **SAY
        )
    return 0


def cmd_use(args: argparse.Namespace) -> int:
    from workbench.database import absolute_url, remember, remembered_path

    if not args.url.strip():
        raise InvalidInputError("the database URL is empty; give sqlite:///path or postgresql://…")
    url = absolute_url(args.url)
    # Opened first: a mistyped URL is refused (exit 2) and the remembered default stays as it was.
    open_from_args(SimpleNamespace(db=url, create=args.create))
    url = remember(url)
    console.print(f"`strata` now opens {display_url(url)} by default (remembered in {remembered_path()})", **SAY)
    _warn_shadowed(url)
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    from workbench.database import builtin_url, forget

    had = forget()
    said = "forgot the remembered default" if had else "no database was remembered"
    console.print(f"{said}; `strata` opens {display_url(builtin_url())} by default", **SAY)
    _warn_shadowed(builtin_url())
    return 0


def _warn_shadowed(url: str) -> None:
    shadow = os.environ.get(ENV_VAR)
    if shadow and shadow != url:
        err_console.print(
            f"${ENV_VAR} is set here ({display_url(shadow)}) and comes first: "
            f"`unset {ENV_VAR}` for the default to apply",
            **SAY,
        )


def register(sub) -> None:
    p = sub.add_parser(
        "db",
        help="show which database `strata` opens; `db use URL` / `db forget` choose its default",
        description="Show the database `strata` opens and what chose it: --db, else $STRATA_DB, else the "
        "remembered default (set by `strata demo` and `strata db use`), else strata.db in the data dir. "
        "Agents (`strata mcp`, core.api.open_store) never use the remembered default.",
    )
    p.add_argument("--db", default=argparse.SUPPRESS, metavar="URL", help="show what this URL would open")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_db)
    actions = p.add_subparsers(dest="db_action", metavar="ACTION")

    use = actions.add_parser(
        "use",
        help="open this database by default from now on",
        description="Remember URL as the database `strata` opens when neither --db nor $STRATA_DB is given. "
        "The database must exist (a Strata database), unless --create makes it. A SQLite path is "
        "remembered as an absolute one.",
    )
    use.add_argument("url", metavar="URL", help="sqlite:///path, a file path, or postgresql://…")
    use.add_argument("--create", action="store_true", help="make the database when it does not exist")
    use.set_defaults(handler=cmd_use)

    forget = actions.add_parser(
        "forget",
        help="go back to the built-in default (strata.db in the data dir)",
        description="Forget the remembered default: `strata` opens $STRATA_DB when set, else strata.db in "
        "the data dir. No database is changed or removed.",
    )
    forget.set_defaults(handler=cmd_forget)
