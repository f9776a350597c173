"""``import pi_trio`` loads what a run needs; the rest (sessions, proxy, wire, mcp, testing) on
first use, with its exported names fixed up (``__module__ == "pi_trio"``) however it is
imported. The third-party stacks too: the HTTP stack (httpx2 where installed, else httpx) with
the first default HTTP client (the first request of a provider), jsonschema and cattrs with
the first tool built. Each check runs in a fresh interpreter."""

from __future__ import annotations

import importlib.util
import os
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


HEAVY = ("httpx", "httpx2", "jsonschema", "cattrs")


def test_import_pi_trio_leaves_httpx_jsonschema_and_cattrs_unloaded() -> None:
    out = _run(f"""
        import sys
        import pi_trio as pt
        from pi_trio.tools import ArgumentValidator, json_schema_for
        from pi_trio.providers import pool_in_use, stream_wire
        print(sorted(m for m in {HEAVY!r} if m in sys.modules))
        print(pt.AgentTool.__module__, ArgumentValidator.__name__, pt.json_schema_for.__module__)
    """)
    assert out.splitlines() == ["[]", "pi_trio ArgumentValidator pi_trio"]


def test_the_first_tool_built_loads_jsonschema_and_cattrs_and_checks_its_schema() -> None:
    out = _run("""
        import sys
        import pi_trio as pt
        try:
            pt.AgentTool("bad", "Bad", "d", {"type": 12}, lambda *a: "x")
        except ValueError as exc:
            print(str(exc).splitlines()[0])
        print("jsonschema" in sys.modules, "cattrs" in sys.modules, "httpx" in sys.modules)
        from pi_trio.tools._validation import format_validation_error
        print(format_validation_error.__module__)
    """)
    assert out.splitlines() == [
        "invalid tool parameters schema: 12 is not valid under any of the given schemas",
        "True True False",
        "pi_trio.tools._error_text",
    ]


def test_a_name_of_the_validation_engine_read_first_loads_it() -> None:
    out = _run("""
        import sys
        from pi_trio.tools._validation import problems_from_errors
        print(problems_from_errors.__name__, "jsonschema" in sys.modules)
    """)
    assert out == "problems_from_errors True"


def test_a_faux_agent_run_with_a_tool_validates_and_never_loads_httpx() -> None:
    out = _run("""
        import sys
        import attrs
        import trio
        import pi_trio as pt
        from pi_trio import faux

        @attrs.define
        class Add:
            a: int
            b: int

        def add(call_id, params, on_update):
            return f"{params.a + params.b}"

        calculator = pt.AgentTool("add", "Add", "Adds two numbers.", Add, add)
        scripted = faux.FauxModel([
            faux.assistant_message([faux.tool_call("add", {"a": "2", "b": 3}, id="c1")]),
            faux.assistant_message([faux.tool_call("add", {"a": "x"}, id="c2")]),
            faux.assistant_message("5"),
        ])
        agent = pt.Agent(
            pt.AgentState(model=scripted.model, tools=[calculator]), stream_fn=scripted
        )

        async def main():
            await agent.prompt("2 + 3?")

        trio.run(main)
        results = [m for m in agent.state.messages if isinstance(m, pt.ToolResultMessage)]
        print([(r.is_error, r.content[0].text.splitlines()[0]) for r in results])
        print(sorted(m for m in ("httpx", "jsonschema", "cattrs") if m in sys.modules))
    """)
    assert out.splitlines() == [
        "[(False, '5'), (True, 'Validation failed for tool \"add\":')]",
        "['cattrs', 'jsonschema']",
    ]


def _default_stack() -> str:
    """The stack the default client comes from here (see ``providers._http.http_stack``)."""
    chosen = os.environ.get("PI_TRIO_HTTP_STACK", "").strip().lower()
    return chosen or ("httpx2" if importlib.util.find_spec("httpx2") else "httpx")


def test_a_provider_request_loads_the_http_stack_and_reports_its_failures() -> None:
    out = _run("""
        import functools
        import socket
        import sys
        import trio
        import pi_trio as pt

        async def refuse_with_503(stream):
            await stream.receive_some()
            await stream.send_all(
                b"HTTP/1.1 503 Service Unavailable\\r\\ncontent-length: 4\\r\\n"
                b"connection: close\\r\\n\\r\\nbusy"
            )
            await stream.aclose()

        def model(port):
            return pt.Model(
                id="m-1", name="M", api="openai-completions", provider="openai",
                base_url=f"http://127.0.0.1:{port}/v1",
            )

        async def main():
            options = pt.StreamOptions(api_key="k", max_retries=0)
            context = pt.Context(messages=[pt.UserMessage("Hi")])
            async with trio.open_nursery() as nursery:
                listeners = await nursery.start(
                    functools.partial(trio.serve_tcp, host="127.0.0.1"), refuse_with_503, 0
                )
                port = listeners[0].socket.getsockname()[1]
                stacks = ("httpx", "httpx2")
                print([m for m in stacks if m in sys.modules])
                answer = await pt.complete_simple(model(port), context, options)
                loaded = [m for m in stacks if m in sys.modules]
                print(loaded, answer.stop_reason, answer.error_message)
                nursery.cancel_scope.cancel()
            closed = socket.socket()  # a port nobody listens on: the connection is refused
            closed.bind(("127.0.0.1", 0))
            port = closed.getsockname()[1]
            closed.close()
            answer = await pt.complete_simple(model(port), context, options)
            print(answer.stop_reason, answer.error_message.split(":")[0])

        trio.run(main)
    """)
    assert out.splitlines() == [
        "[]",
        f"['{_default_stack()}'] error HTTP 503 Service Unavailable: busy",
        "error connection to 127.0.0.1 failed",
    ]
