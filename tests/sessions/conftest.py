"""The session tests run on both backends: ``store_url`` is a fresh SQLite file or a fresh
PostgreSQL database, and ``raw`` reads and changes that store behind pi_trio's back.

PostgreSQL comes from ``$PI_TRIO_TEST_POSTGRES_URL`` (CI starts one), else from a throwaway
server these tests start with the machine's own binaries (``tests/sessions/_pg.py``), else the
PostgreSQL tests are skipped, loudly (a warning and the skip reason in the summary), unless
``$PI_TRIO_REQUIRE_POSTGRES`` is set: then its absence fails the run.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..support import no_postgres, require_psycopg
from . import _pg

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of a PostgreSQL server these tests may create databases on."""
    require_psycopg()
    given = os.environ.get("PI_TRIO_TEST_POSTGRES_URL")
    if given:
        yield given
        return
    if _pg.binaries() is None:
        no_postgres("no server (set PI_TRIO_TEST_POSTGRES_URL, or install postgresql)")
    with contextlib.ExitStack() as stack:
        try:
            url = stack.enter_context(_pg.throwaway(tcp=True))
        except (RuntimeError, OSError) as exc:
            no_postgres(f"could not start a throwaway server: {exc}")
        yield url


def with_database(url: str, name: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path="/" + name))


class Raw:
    """SQL on the store's own tables with a connection of the test's (``?`` placeholders)."""

    def __init__(self, kind: str, where: str) -> None:
        self.kind = kind
        self.where = where

    def __call__(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        if self.kind == "sqlite":
            import sqlite3

            db = sqlite3.connect(self.where)
            try:
                rows = db.execute(sql, params).fetchall()
                db.commit()
            finally:
                db.close()
            return rows
        import psycopg

        with psycopg.connect(self.where, autocommit=True) as conn:
            cursor = conn.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]
            return cursor.fetchall() if cursor.description else []


def _fresh_database(server: str) -> Iterator[str]:
    import psycopg

    name = f"t_{secrets.token_hex(6)}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield with_database(server, name)
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh store: a SQLite file, or a PostgreSQL database."""
    if request.param == "sqlite":
        yield str(tmp_path / "agents.db")
    else:
        yield from _fresh_database(request.getfixturevalue("postgres_server"))


@pytest.fixture
def raw(store_url: str) -> Raw:
    return Raw("postgresql" if "://" in store_url else "sqlite", store_url)


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A fresh PostgreSQL database (for the tests of PostgreSQL alone)."""
    yield from _fresh_database(postgres_server)
