"""Where the projections live: generations of a DuckDB file, one of them current.

    projections/
        current -> store-<id>        a symlink, swapped atomically by replay
        store-<id>/memory.duckdb     the projector's own file (DuckDB: one writer, nobody else)
        store-<id>/snapshot.duckdb   a copy published after each fold, for every reader
        .lock                        held by the one projector

DuckDB lets one process hold a file for writing and refuses every other process, even a
read-only one. So readers never open the projector's file: they open the last published
snapshot, which is replaced by rename (a reader that has it open keeps its copy). A reader
opens it read-only, and `reverie sql` cannot attach any other file (see projections/sql.py).

DuckDB checks a checksum on every block it reads: a damaged file fails loudly. A store is a
fold of the log, so the projector rebuilds one it cannot read, and republishes a snapshot
that is not the file it published (see projections/projector.py).
"""

import contextlib
import hashlib
import inspect
import os
import shutil
from typing import TextIO

import duckdb

from projections.folds import FOLDS, FUNCTION_MODULES, FUNCTIONS, MAPPING, SCHEMA
from schemas.disk.files import lock_directory, sync_directory
from schemas.ids import new_event_id

# Any change to the tables or to how events fold into them (their SQL, and the source of the
# modules that hold the Python functions they call) makes another version: a store of another
# version is rebuilt from the log.
_FUNCTION_SOURCES = [inspect.getsource(module) for module in FUNCTION_MODULES]
SCHEMA_VERSION = hashlib.blake2b(
    "\n".join([SCHEMA, *MAPPING, *(sql for _, sql in FOLDS), *_FUNCTION_SOURCES]).encode(), digest_size=8
).hexdigest()
DATABASE = "memory.duckdb"
SNAPSHOT = "snapshot.duckdb"
CURRENT = "current"


class Store:
    """One generation of the projections."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.database = os.path.join(path, DATABASE)
        self.snapshot = os.path.join(path, SNAPSHOT)

    def connect(self) -> duckdb.DuckDBPyConnection:
        """The writer's connection; creates the tables in a new store."""
        db = duckdb.connect(self.database)
        for name, (function, parameters, result) in FUNCTIONS.items():
            db.create_function(name, function, parameters, result, side_effects=False)  # type: ignore[arg-type]
        if not db.execute("SELECT 1 FROM duckdb_tables() WHERE table_name = 'meta'").fetchall():
            db.execute("BEGIN")
            db.execute(SCHEMA)
            db.execute("INSERT INTO meta VALUES ('schema_version', ?)", [SCHEMA_VERSION])
            db.execute("COMMIT")
        return db

    def publish(self, db: duckdb.DuckDBPyConnection) -> tuple[int, int, int] | None:
        """Make what `db` holds now the snapshot that readers open; its identity."""
        db.execute("CHECKPOINT")
        temp = self.snapshot + ".tmp"
        shutil.copyfile(self.database, temp)
        with open(temp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(temp, self.snapshot)
        sync_directory(self.path)
        return self.snapshot_identity()

    def snapshot_identity(self) -> tuple[int, int, int] | None:
        """What changes when the snapshot file is replaced or written to (None: there is none)."""
        try:
            stat = os.stat(self.snapshot)
        except FileNotFoundError:
            return None
        return stat.st_ino, stat.st_size, stat.st_mtime_ns


def unreadable(database: str) -> str | None:
    """Why the DuckDB file `database` cannot be read whole (None: it can). Reads every row of
    every table: a full scan, for after a failure only."""
    try:
        with duckdb.connect(database, read_only=True) as db:
            tables = db.execute("SELECT table_name FROM duckdb_tables() WHERE NOT internal").fetchall()
            for (table,) in tables:
                db.execute(f'SELECT sum(hash(COLUMNS(*))) FROM "{table}"').fetchall()
    except duckdb.Error as e:
        return str(e)
    return None


# meta's key: the newest event folded that may have changed what a memory says (its text, its
# scope, whether it is forgotten: schemas/registry.py TEXTLESS_KINDS): a reader that read the
# memories as of that event may skip them
MEMORIES_CHANGED_BY = "memories_changed_by"


def memories_changed_by(db: duckdb.DuckDBPyConnection, meta: str = "meta") -> str | None:
    """MEMORIES_CHANGED_BY of the store `db` reads (`meta`: its table's name there); None when
    the store says nothing (none folded yet, or a store from before it was said)."""
    rows = db.execute(f"SELECT value FROM {meta} WHERE key = ?", [MEMORIES_CHANGED_BY]).fetchall()
    return rows[0][0] if rows else None


def schema_version(db: duckdb.DuckDBPyConnection, meta: str = "meta") -> str | None:
    rows = db.execute(f"SELECT value FROM {meta} WHERE key = 'schema_version'").fetchall()
    return rows[0][0] if rows else None


def current_store(root: str) -> Store | None:
    link = os.path.join(root, CURRENT)
    if not os.path.isdir(link):
        return None
    return Store(os.path.realpath(link))


def new_store(root: str) -> Store:
    path = os.path.join(root, f"store-{new_event_id()}")
    os.makedirs(path, mode=0o700)
    return Store(path)


def make_current(root: str, store: Store) -> None:
    """Swap `store` in as the current one, atomically."""
    temp = os.path.join(root, f".{CURRENT}.{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp)
    os.symlink(os.path.basename(store.path), temp)
    os.replace(temp, os.path.join(root, CURRENT))
    sync_directory(root)


def remove_store(store: Store) -> None:
    shutil.rmtree(store.path, ignore_errors=True)


def lock_projections(root: str) -> TextIO:
    """Hold the projections for this process alone (one projector); keep the handle open."""
    return lock_directory(root, f"another process is projecting into {root}")
