"""``import pi_trio`` loads what a run needs; the rest (sessions, proxy, wire, mcp, testing) on
first use, with its exported names fixed up (``__module__ == "pi_trio"``) however it is
imported. Each check runs in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


LAZY = ("pi_trio.sessions", "pi_trio.proxy", "pi_trio.wire", "pi_trio.mcp", "pi_trio.testing")


def test_import_pi_trio_leaves_the_optional_subpackages_unloaded() -> None:
    out = _run(f"""
        import sys
        import pi_trio as pt
        print(sorted(m for m in {LAZY!r} if m in sys.modules))
        agent = pt.Agent(pt.AgentState())  # what a run needs is there
        print(sorted(m for m in {LAZY!r} if m in sys.modules))
    """)
    assert out.splitlines() == ["[]", "[]"]


def test_a_lazy_name_is_loaded_on_first_use_and_reports_pi_trio() -> None:
    out = _run("""
        import sys
        import pi_trio as pt
        print(pt.SessionStore.__module__, pt.SessionStore.__qualname__)
        print("pi_trio.sessions" in sys.modules, pt.to_json.__module__)
        print(pt.sessions.SessionStore is pt.SessionStore)
        print("ProxyServer" in dir(pt), "pi_trio.proxy" in sys.modules)
    """)
    assert out.splitlines() == [
        "pi_trio SessionStore",
        "True pi_trio",
        "True",
        "True False",
    ]


def test_a_subpackage_imported_directly_is_fixed_up_too() -> None:
    out = _run("""
        from pi_trio.proxy import ProxyDone, ProxyServer
        from pi_trio.sessions import SessionEntry
        import pi_trio as pt
        print(ProxyServer.__module__, ProxyDone.__module__, SessionEntry.__module__)
        print(pt.ProxyServer is ProxyServer)
    """)
    assert out.splitlines() == ["pi_trio pi_trio.proxy pi_trio", "True"]


def test_an_unknown_name_is_an_attribute_error() -> None:
    out = _run("""
        import pi_trio as pt
        try:
            pt.no_such_name
        except AttributeError as exc:
            print(exc)
    """)
    assert out == "module 'pi_trio' has no attribute 'no_such_name'"
