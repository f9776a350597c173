"""pi's own ``streamProxy`` (Node, pi-agent-core 0.73.1) against the pi_trio proxy server.

Skipped without ``node``/``npm``, or when the package cannot be installed. The package goes
into a folder under the system's temporary directory (outside the repository) and is reused
by later runs.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import trio

import pi_trio as pt
from pi_trio.providers import faux

from ._endless import Endless
from .conftest import TOKEN, StartProxy

pytestmark = pytest.mark.slow  # pi's Node client, installed with npm

PACKAGES = ["@mariozechner/pi-agent-core@0.73.1", "@mariozechner/pi-ai@0.73.1"]
SCRIPT = Path(__file__).parent / "node" / "pi_stream_proxy.mjs"


@pytest.fixture(scope="module")
def pi_script() -> Path:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed to run pi's streamProxy")
    folder = Path(tempfile.gettempdir()) / "pi_trio_test_node" / "pi-agent-core-0.73.1"
    marker = folder / "node_modules" / "@mariozechner" / "pi-agent-core" / "package.json"
    if not marker.exists():
        folder.mkdir(parents=True, exist_ok=True)
        try:
            subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--silent", *PACKAGES],
                cwd=folder,
                check=True,
                capture_output=True,
                timeout=300,
            )
        except (subprocess.SubprocessError, OSError) as exc:
            pytest.skip(f"could not install pi-agent-core with npm: {exc}")
    script = folder / SCRIPT.name  # beside node_modules, so the import resolves
    shutil.copyfile(SCRIPT, script)
    return script


async def run_pi(script: Path, mode: str, url: str, token: str, model: pt.Model) -> list[Any]:
    request = pt.proxy.request_body(
        model,
        pt.Context(system_prompt="Be terse.", messages=[pt.UserMessage("Hi")]),
        pt.StreamOptions(temperature=0.5),
    )
    with trio.fail_after(30):
        result = await trio.run_process(
            ["node", str(script), mode, url, token],
            stdin=json.dumps(request).encode(),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert result.returncode == 0, result.stderr.decode()
    return [json.loads(line) for line in result.stdout.decode().splitlines()]


async def test_pi_client_streams_through_the_pi_trio_server(
    pi_script: Path, start_proxy: StartProxy
) -> None:
    reply = faux.assistant_message(
        [
            faux.thinking("Hmm.", signature="sig-1"),
            faux.text("Sunny in Paris."),
            faux.tool_call("get_weather", {"city": "Paris"}, id="call_1"),
        ],
        usage=pt.Usage(input=4, output=6, total_tokens=10),
    )
    scripted = faux.FauxModel([reply, reply])
    server = await start_proxy(stream_fn=scripted)
    lines = await run_pi(pi_script, "stream", server.url, TOKEN, scripted.model)
    assert scripted.calls[0].options.temperature == 0.5

    direct: list[dict[str, Any]] = []
    async with scripted(scripted.model, pt.Context(), pt.StreamOptions()) as events:
        async for event in events:
            line: dict[str, Any] = {"type": event.type}
            if hasattr(event, "content_index"):
                line["contentIndex"] = event.content_index
            if hasattr(event, "delta"):
                line["delta"] = event.delta
            direct.append(line)
            final_message = event.message if isinstance(event, pt.StreamDone) else None
    assert lines[:-1] == direct

    pi_final = pt.from_json(lines[-1]["final"], pt.AssistantMessage)
    assert final_message is not None
    assert pi_final.content == final_message.content
    assert (pi_final.stop_reason, pi_final.usage) == ("toolUse", final_message.usage)


async def test_pi_client_gets_the_error_text(pi_script: Path, start_proxy: StartProxy) -> None:
    server = await start_proxy(stream_fn=faux.FauxModel())
    lines = await run_pi(
        pi_script, "stream", server.url, "wrong-token", pt.get_model("faux", "faux-1")
    )
    assert lines[-2] == {"type": "error"}
    final = lines[-1]["final"]
    assert final["stopReason"] == "error"
    assert final["errorMessage"] == "Proxy error: missing or invalid bearer token"


async def test_pi_client_abort_cancels_the_upstream(
    pi_script: Path, start_proxy: StartProxy
) -> None:
    endless = Endless()
    server = await start_proxy(stream_fn=endless)
    lines = await run_pi(pi_script, "abort", server.url, TOKEN, pt.get_model("faux", "faux-1"))
    assert [line.get("type") for line in lines[:-1]] == [
        "start",
        "text_start",
        "text_delta",
        "error",
    ]
    assert lines[-1]["final"]["stopReason"] == "aborted"
    with trio.fail_after(10):
        await endless.closed.wait()
    assert isinstance(endless.closed_by, trio.Cancelled)
