"""Database selection and connection setup.

Models bind to one ``DatabaseProxy``; ``open_database`` picks the engine from a URL
(``sqlite:///path``, a bare path, or ``postgresql://…``) and initialises the proxy.
SQLite is the embedded default, in WAL mode in the platform data dir.
"""

from __future__ import annotations

import operator
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

from urllib.parse import unquote, urlparse
import peewee
from peewee import Database, DatabaseProxy, PostgresqlDatabase, SqliteDatabase

from core.errors import InvalidInputError, StorageConflictError, StoreUnavailableError
from core.files import create_private_file
from core.redact import redact_text

db = DatabaseProxy()

SQLITE_PRAGMAS = {
    "journal_mode": "wal",
    "foreign_keys": 1,
    "busy_timeout": 5000,
    "synchronous": "normal",
    # A million messages make a postings index of tens of millions of rows; each capture
    # touches hundreds of its pages. A 128 MB cache and a checkpoint every 10,000 WAL pages
    # (not 1,000) let those pages be rewritten in memory between checkpoints: capture into a
    # 1M-message store went from ~960 to ~1,150 messages/s.
    "cache_size": -128000,
    "wal_autocheckpoint": 10000,
}

ENV_VAR = "STRATA_DB"

# SQLite's INTEGER and REAL are 64-bit; peewee's PostgreSQL defaults (INTEGER, SERIAL, REAL) are
# 32-bit. A REAL epoch timestamp is only good to 128 seconds (two events a minute apart compare
# equal, and a keyset page repeats or skips them), and an id past 2**31 would not bind. Stores
# made before schema 21 are widened by that migration.
POSTGRES_FIELD_TYPES = {"INT": "BIGINT", "AUTO": "BIGSERIAL", "FLOAT": "DOUBLE PRECISION"}


def default_sqlite_path() -> Path:
    # start-up time: platformdirs (~2.5 ms) is loaded only when no database URL is given
    from platformdirs import user_data_dir

    return Path(user_data_dir("strata", appauthor=False)) / "strata.db"


def resolve_url(url: str | None) -> str:
    """The URL to open: the argument, else ``$STRATA_DB``, else the platform default."""
    if url is not None and not url.strip():
        raise InvalidInputError("the database URL is empty; give sqlite:///path or postgresql://…, or leave --db out")
    chosen = url or os.environ.get(ENV_VAR)
    if chosen:
        return chosen
    return f"sqlite:///{default_sqlite_path()}"


def display_url(url: str | None) -> str:
    """``url`` as a person may see it: ``postgresql://user:***@host/db``. The password goes (and a
    ``password=`` in the query); the user, host and database stay, since they say which store it is.
    Every URL in a message, a log line or a screen goes through this."""
    if not url or "://" not in url:
        return url or ""

    scheme, rest = url.split("://", 1)
    end = min((i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    userinfo, at, host = rest[:end].rpartition("@")
    if at and ":" in userinfo:
        rest = f"{userinfo.split(':', 1)[0]}:***@{host}{rest[end:]}"
    return redact_text(f"{scheme}://{rest}")


def sqlite_path(url: str) -> Path | None:
    """The file path behind a SQLite URL or bare path; None for other engines."""
    if url.startswith("sqlite:///"):
        return Path(url[len("sqlite:///") :])
    if url.startswith("sqlite://"):
        raise InvalidInputError(
            f"database URL {display_url(url)!r}: use sqlite:///relative/path or sqlite:////absolute/path"
        )
    if "://" in url:
        return None
    return Path(url)


def make_database(url: str) -> Database:
    path = sqlite_path(url)
    if path is not None:
        if str(path) == ":memory:":
            # Thread workers would each see a separate empty database.
            raise InvalidInputError("in-memory SQLite is not supported; give a file path")

        # Created here, 0600 in directories made 0700, before SQLite writes memory into it (SQLite
        # would create it, and its -wal and -shm, with the umask's 0644). open_store(create=False)
        # refuses a missing file before this point.
        create_private_file(path)
        return SqliteDatabase(str(path), pragmas=SQLITE_PRAGMAS, timeout=5)
    if url.startswith(("postgres://", "postgresql://")):
        parts = urlparse(url)
        if not parts.path.lstrip("/"):
            raise InvalidInputError(
                f"database URL {display_url(url)!r} names no database (postgresql://user@host/dbname)"
            )
        return PostgresqlDatabase(
            unquote(parts.path.lstrip("/")),
            user=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
            host=parts.hostname,
            port=parts.port or 5432,
            field_types=POSTGRES_FIELD_TYPES,
        )
    raise InvalidInputError(f"database URL {display_url(url)!r}: unsupported scheme (use sqlite:/// or postgresql://)")


def is_sqlite() -> bool:
    return isinstance(db.obj, SqliteDatabase)


# Every write transaction on PostgreSQL first takes this transaction-level advisory lock, so writers
# run one at a time as they do on SQLite (BEGIN IMMEDIATE). Positions, turn numbers, block
# sequences and job claims are read-then-written counters; serialising the writers makes each
# allocation see the previous one's commit, where READ COMMITTED alone let two processes take
# the same thread position. Readers never wait for it (MVCC).
PG_WRITE_LOCK_KEY = 0x5374_7261_7461  # "Strata"
# How long a PostgreSQL writer waits for that lock, as SQLite's busy timeout.
PG_LOCK_TIMEOUT = "30s"


@contextmanager
def write_transaction() -> Iterator[None]:
    """A write transaction that takes the write lock up front (SQLite BEGIN IMMEDIATE, a
    PostgreSQL advisory lock).

    A second writer waits at the start rather than failing half-way with a lock upgrade or a
    unique-index clash. A writer that still finds the lock held gets StoreUnavailableError;
    any other driver error becomes a StrataError naming what failed, never a raw driver error.
    """

    try:
        if db.in_transaction():
            with db.atomic():
                yield
        elif is_sqlite():
            with db.atomic("IMMEDIATE"):
                yield
        else:
            with db.atomic():
                db.execute_sql(f"SET LOCAL lock_timeout = '{PG_LOCK_TIMEOUT}'")
                db.execute_sql("SELECT pg_advisory_xact_lock(%s)", (PG_WRITE_LOCK_KEY,))
                db.execute_sql("SET LOCAL lock_timeout = 0")
                yield
    except peewee.IntegrityError as exc:
        raise StorageConflictError(
            f"another writer stored the same record at the same time ({_first_line(exc)}); nothing of this "
            "step was written, try again"
        ) from exc
    except peewee.OperationalError as exc:
        text = str(exc).lower()
        if "locked" in text or "lock timeout" in text or "canceling statement" in text:
            raise StoreUnavailableError(
                "the database is locked by another writer (waited "
                f"{'5 s' if is_sqlite() else PG_LOCK_TIMEOUT}); nothing of this step was written, "
                "try again when it is done"
            ) from exc
        raise StoreUnavailableError(
            f"the database refused a write ({_first_line(exc)}); nothing of this step was written"
        ) from exc


@contextmanager
def read_snapshot() -> Iterator[None]:
    """A read-only transaction whose statements all see one snapshot of the store.

    On SQLite (WAL) a deferred transaction already reads one snapshot from its first read on. On
    PostgreSQL each statement of a READ COMMITTED transaction sees the commits made before it, so
    a search index's statistics and the rows read after them could disagree: REPEATABLE READ
    gives the whole transaction one snapshot. Never write inside it."""
    if db.in_transaction():
        with db.atomic():
            yield
        return
    with db.atomic():
        if not is_sqlite():
            db.execute_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield


# What the driver raises when the store itself fails (a server gone, a disk error, a file that
# stopped being a database), as opposed to a mistake in a query.
DRIVER_FAILURES = (peewee.OperationalError, peewee.InterfaceError)


def store_failure(exc: BaseException):
    """A driver failure outside a write transaction (a read, a connect) as the StrataError a caller
    gets: the cause's first line, never the driver's exception. Writes get theirs from
    ``write_transaction``."""

    return StoreUnavailableError(f"the database failed: {_first_line(exc)}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def bulk_insert(model, columns: list[str], rows: list[tuple], *, ignore_conflicts: bool = False) -> None:
    """Insert many rows with one prepared statement (executemany).

    peewee's insert_many builds SQL value by value, which dominated index writes; this
    keeps the statement portable by using the engine's own parameter marker. With
    ``ignore_conflicts`` a row that breaks a unique index is skipped (SQLite's OR IGNORE,
    PostgreSQL's ON CONFLICT DO NOTHING).
    """
    if not rows:
        return
    database = db.obj
    table = model._meta.table_name
    marker = database.param
    left, right = database.quote[0], database.quote[1]
    quoted = ", ".join(f"{left}{c}{right}" for c in columns)
    sqlite = is_sqlite()
    verb = "INSERT OR IGNORE" if ignore_conflicts and sqlite else "INSERT"
    tail = " ON CONFLICT DO NOTHING" if ignore_conflicts and not sqlite else ""
    sql = f"{verb} INTO {left}{table}{right} ({quoted}) VALUES ({', '.join([marker] * len(columns))}){tail}"
    cursor = database.cursor()
    cursor.executemany(sql, rows)


IN_CHUNK = 500  # ids per IN list: well under every engine's limit on bound parameters

# SQLite and Postgres integers are 64-bit: a larger Python int cannot even be bound as a
# parameter (OverflowError), so callers' ids and positions are checked against this first.
MAX_ROW_ID = 2**63 - 1


def is_row_id(value: object) -> bool:
    """Whether ``value`` can be the id of a stored row (an int from 1 to MAX_ROW_ID).
    Anything else names no row: callers answer "does not exist" without asking the database."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_ROW_ID


# The most rows one listing returns (events, graph nodes, jobs, import batches): past it, page.
LIST_MAX = 10_000


def clamp(value: object, low: int, high: int, default: int) -> int:
    """A caller's limit, offset or position held within [low, high]; ``default`` when it is not
    an integer at all."""
    if not isinstance(value, int) or isinstance(value, bool):
        return default
    return max(low, min(high, value))


def _balanced(op, clauses: Sequence[Any]):
    if len(clauses) == 1:
        return clauses[0]
    middle = len(clauses) // 2
    return op(_balanced(op, clauses[:middle]), _balanced(op, clauses[middle:]))


def all_of(clauses: Sequence[Any]):
    """``clauses`` joined by AND as a balanced tree. Chained ``.where`` calls (or a plain
    reduce) nest one level per clause: about 90 overflow SQLite's parser stack and a few
    hundred Python's recursion limit while peewee renders them."""
    return _balanced(operator.and_, list(clauses))


def any_of(clauses: Sequence[Any]):
    """``clauses`` joined by OR as a balanced tree (see ``all_of``)."""
    return _balanced(operator.or_, list(clauses))


def chunks(items: Sequence[Any], size: int = IN_CHUNK) -> Iterator[Sequence[Any]]:
    """``items`` in consecutive slices of at most ``size`` (for IN lists)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


_STATEMENTS: dict[tuple, str] = {}


# A loose scan past this many values is slower than reading the index once.
DISTINCT_SEEKS = 5_000


def distinct_values(field) -> list:
    """The distinct non-null values of an indexed column, in order, by one index seek per value.

    A plain SELECT DISTINCT reads every index entry (SQLite skips through an index only with
    ANALYZE statistics): 144 ms for 133 participant names over 1.7M rows. Past
    ``DISTINCT_SEEKS`` values the plain scan is cheaper and is used instead."""
    table, column = field.model._meta.table_name, field.column_name
    seek = (
        f'WITH RECURSIVE v(x) AS (SELECT MIN("{column}") FROM "{table}" UNION ALL '
        f'SELECT (SELECT MIN("{column}") FROM "{table}" WHERE "{column}" > v.x) FROM v WHERE v.x IS NOT NULL) '
        f"SELECT x FROM v WHERE x IS NOT NULL LIMIT {DISTINCT_SEEKS + 1}"
    )
    values = [row[0] for row in db.execute_sql(seek).fetchall()]
    if len(values) <= DISTINCT_SEEKS:
        return values
    plain = f'SELECT DISTINCT "{column}" FROM "{table}" WHERE "{column}" IS NOT NULL ORDER BY 1'
    return [row[0] for row in db.execute_sql(plain).fetchall()]


def _statement(verb: str, meta, fields: list, render) -> str:
    """The SQL of one statement shape (verb, table, columns, engine), rendered once:
    ``render(database, quoted)`` builds it, ``quoted(name)`` quoting an identifier."""
    database = db.obj
    key = (verb, meta.table_name, tuple(f.name for f in fields), type(database))
    sql = _STATEMENTS.get(key)
    if sql is None:
        left, right = database.quote[0], database.quote[1]
        sql = _STATEMENTS[key] = render(database, lambda name: f"{left}{name}{right}")
    return sql


def insert_one(model, values: dict):
    """Insert one row and return it as a model instance, like ``model.create`` (field
    defaults included) but without building the statement anew each time: peewee's SQL
    generation cost more than SQLite's insert on the derivation hot paths.
    """
    meta = model._meta
    pk = meta.primary_key
    instance = model(**values)
    data = {name: value for name, value in instance.__data__.items() if not (name == pk.name and value is None)}
    fields = [meta.fields[name] for name in data]
    sql = _statement(
        "insert",
        meta,
        fields,
        lambda database, quoted: (
            f"INSERT INTO {quoted(meta.table_name)} ({', '.join(quoted(f.column_name) for f in fields)}) "
            f"VALUES ({', '.join([database.param] * len(fields))})"
            + ("" if is_sqlite() else f" RETURNING {quoted(pk.column_name)}")
        ),
    )
    cursor = db.obj.execute_sql(sql, [f.db_value(v) for f, v in zip(fields, data.values())])
    setattr(instance, pk.name, cursor.lastrowid if is_sqlite() else cursor.fetchone()[0])
    instance._dirty.clear()
    return instance


def update_by_id(model, record_id, values: dict) -> int:
    """``model.update(**values).where(model.id == record_id).execute()`` with the UPDATE
    rendered once per table, column set and engine; values go through their fields'
    conversions (JSON fields included). Returns the number of rows changed."""
    meta = model._meta
    pk = meta.primary_key
    fields = [meta.fields[name] for name in values]
    sql = _statement(
        "update",
        meta,
        fields,
        lambda database, quoted: (
            f"UPDATE {quoted(meta.table_name)} SET "
            f"{', '.join(f'{quoted(f.column_name)} = {database.param}' for f in fields)} "
            f"WHERE {quoted(pk.column_name)} = {database.param}"
        ),
    )
    params = [f.db_value(v) for f, v in zip(fields, values.values())]
    return db.obj.execute_sql(sql, [*params, pk.db_value(record_id)]).rowcount


def save_one(instance) -> int:
    """``instance.save()`` for a stored row: every loaded field but the key, through
    ``update_by_id``'s rendered statement."""
    pk = type(instance)._meta.primary_key
    data = {name: value for name, value in instance.__data__.items() if name != pk.name}
    changed = update_by_id(type(instance), instance.__data__[pk.name], data)
    instance._dirty.clear()
    return changed


class Prepared:
    """A peewee query rendered once per engine and argument shape, then run with new values.

    Rendering a statement in peewee costs about ten times what SQLite takes to run a keyed
    lookup, and derivation asks the same few questions tens of thousands of times.
    ``build(*args)`` must return the query; it is called once per shape with stand-in values
    in place of the arguments: ints, floats, strings, and lists of one of those. None and
    booleans are part of the shape, so they may change the statement. Lists are for
    ``IN (...)``: one is padded to the next power of two by repeating its last item (which
    changes no IN test), so an IN list costs one rendering per size class, not per length.
    Rows come back exactly as the built query would return them (models, tuples, dicts). The
    first run of a shape converts them through the query's own cursor wrapper; what it resolved
    (columns, converters, attribute names) is then kept as a ``_Reader`` that converts all rows
    of a later run at once, since peewee's per-row path (one fetch, one dict, one ``setattr`` per
    column) costs more than the lookup itself.
    """

    # Stand-ins no real argument or constant is expected to equal (the float ones are never whole).
    _INT = -7_919_000_000_000
    _FLOAT = -8_919_000_000_000.5
    _SCALARS = (int, float, str)

    def __init__(self, build) -> None:
        self.build = build
        self._shapes: dict[tuple, tuple] = {}

    @classmethod
    def _prepare(cls, args: tuple) -> tuple[tuple, list]:
        """(the shape of ``args``, the values that fill the statement's slots in order)."""
        shape: list[object] = []
        values: list[object] = []
        for arg in args:
            if arg is None or isinstance(arg, bool):
                shape.append(arg)
            elif isinstance(arg, cls._SCALARS):
                shape.append(type(arg))
                values.append(arg)
            elif isinstance(arg, (list, tuple)):
                kind = type(arg[0]) if arg else None
                if arg and (kind not in cls._SCALARS or any(type(a) is not kind for a in arg)):
                    if not all(isinstance(a, int) for a in arg):  # booleans among ids bind as 0 and 1
                        raise TypeError("Prepared: a list argument must hold ints, floats or strings, all of one type")
                    kind, arg = int, [int(a) for a in arg]
                size = 1 << (len(arg) - 1).bit_length() if arg else 0
                shape.append(("list", kind, size))
                values.extend(arg)
                if size > len(arg):
                    values.extend([arg[-1]] * (size - len(arg)))
            else:
                raise TypeError(
                    f"Prepared query arguments must be int, float, str, None, bool or lists of them, "
                    f"got {type(arg).__name__}"
                )
        return tuple(shape), values

    def _compile(self, shape: tuple) -> tuple:
        slots: dict[object, int] = {}

        def stand_in(kind):
            index = len(slots)
            value = (
                self._INT - index if kind is int else self._FLOAT - index if kind is float else f"\x00slot{index}\x00"
            )
            slots[value] = index
            return value

        args = [
            [stand_in(item[1]) for _ in range(item[2])]
            if isinstance(item, tuple)
            else stand_in(item)
            if item in self._SCALARS
            else item
            for item in shape
        ]
        query = self.build(*args)
        sql, params = query.sql()
        # Each parameter is an argument's slot or a constant of the query itself.
        plan = [
            (True, slots[p]) if isinstance(p, self._SCALARS) and not isinstance(p, bool) and p in slots else (False, p)
            for p in params
        ]
        if {i for is_slot, i in plan if is_slot} != set(slots.values()):
            raise TypeError(
                "Prepared: an argument does not reach the statement as given (unused, or converted "
                "by a JSON or date field); pass such values already converted, in a peewee Value"
            )
        return query, sql, plan

    def _cursor(self, args: tuple):
        shape, values = self._prepare(args)
        key = (type(db.obj), shape)
        entry = self._shapes.get(key)
        if entry is None:
            if len(self._shapes) > 256:  # keep the cache bounded whatever callers pass
                self._shapes.clear()
            entry = self._shapes[key] = [*self._compile(shape), None]  # the reader comes with the first rows
        query, sql, plan = entry[:3]
        cursor = db.execute_sql(sql, [values[i] if is_slot else i for is_slot, i in plan])
        return query, cursor, entry

    def rows(self, *args) -> list:
        return self._read(*self._cursor(args))

    @staticmethod
    def _read(query, cursor, entry: list) -> list:
        reader = entry[3]
        if reader is not None:
            return reader.read(cursor.fetchall())
        wrapper = query._get_cursor_wrapper(cursor)
        found = list(wrapper)
        if wrapper.initialized:  # a first run without rows learns nothing
            entry[3] = _Reader.of(wrapper, query)
        return found

    def first(self, *args):
        found = self.rows(*args)
        return found[0] if found else None

    def get(self, *args):
        """The first row, or the query's ``DoesNotExist`` when there is none (as ``Model.get``)."""
        query, cursor, entry = self._cursor(args)
        found = self._read(query, cursor, entry)
        if found:
            return found[0]
        raise query.model.DoesNotExist(f"no {query.model.__name__} matches {args!r}")

    def execute(self, *args) -> int:
        """Run an UPDATE or DELETE; the number of rows it changed."""
        return self._cursor(args)[1].rowcount


_NOT_MAPPED = object()


class _Reader:
    """Converts a statement's rows as peewee's cursor wrapper did on its first run.

    Built from that (initialized) wrapper: the same converters and keys, and for model rows the
    ``__data__`` entry each column's ``setattr`` would have written. Only the wrappers of plain
    model, dict and tuple rows are read this way; ``of`` returns None for anything else (joins
    into related models, named tuples, a column that lands on a property), which stays on peewee.
    """

    def __init__(self, kind: str, converters: list, order: list[int], names: list[str], model=None) -> None:
        self.kind = kind
        self.converters = converters
        self.order = order  # column indexes in the order the wrapper fills its dict
        self.names = names  # per column: dict key, or the model's __data__ key
        self.model = model

    @classmethod
    def of(cls, wrapper, query) -> "_Reader | None":
        kind = type(wrapper)
        if kind is peewee.ModelTupleCursorWrapper:
            return cls("tuple", list(wrapper.converters), [], [])
        if kind is peewee.ModelDictCursorWrapper:
            return cls(
                "dict",
                list(wrapper.converters),
                list(wrapper.no_convert) + list(wrapper.convert),
                list(wrapper.unique_columns),
            )
        if (
            kind is not peewee.ModelObjectCursorWrapper
            or wrapper.constructor is not query.model
            or query.model.__init__ is not peewee.Model.__init__
        ):  # the instance is built here, not by __init__
            return None
        names = []
        for key in wrapper.unique_columns:
            name = _data_key(query.model, key)
            if name is _NOT_MAPPED:
                return None
            names.append(name)
        return cls(
            "model", list(wrapper.converters), list(wrapper.no_convert) + list(wrapper.convert), names, query.model
        )

    def read(self, rows: list) -> list:
        converters, order, names = self.converters, self.order, self.names
        if self.kind == "tuple":
            if not any(converters):
                return rows
            steps = list(enumerate(converters))
            return [tuple([convert(row[i]) if convert is not None else row[i] for i, convert in steps]) for row in rows]
        steps = [(i, names[i], converters[i]) for i in order]
        if self.kind == "dict":
            return [
                {name: convert(row[i]) if convert is not None else row[i] for i, name, convert in steps} for row in rows
            ]
        model, new = self.model, object.__new__
        out = []
        for row in rows:
            obj = new(model)
            obj.__data__ = {name: convert(row[i]) if convert is not None else row[i] for i, name, convert in steps}
            obj._dirty = set()
            obj.__rel__ = {}
            out.append(obj)
        return out


def _data_key(model, key: str):
    """The ``__data__`` key that ``setattr(instance, key, value)`` writes on a fresh instance of
    ``model`` with a plain (non-model) value, or _NOT_MAPPED when it does something else."""
    for klass in model.__mro__:
        if key in klass.__dict__:
            attribute = klass.__dict__[key]
            break
    else:
        return _NOT_MAPPED  # an instance attribute, not a field: left to peewee
    if type(attribute) in (peewee.FieldAccessor, peewee.ForeignKeyAccessor):
        return attribute.name
    if type(attribute) is peewee.ObjectIdAccessor:
        return _data_key(model, attribute.field.name)
    return _NOT_MAPPED
