"""pause_session, resume_session and fork_session through the official `mcp` SDK client, in both
eras (legacy sessions and the stateless 2026-07-28 revision), against a real runboxd and real
sandboxes (docs/data.md): a suspended session keeps its variables and an execute_code resumes
it; a hibernated one keeps its files and its interpreter restarts; a fork has the files, not the
variables, and goes its own way."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

import rbtest


def texts(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_model_pauses_resumes_and_forks_its_session(server, mode):
    async def main():
        async with Client(server.url + "/mcp", mode=mode) as c:
            names = {t.name for t in (await c.list_tools()).tools}
            assert {"pause_session", "resume_session", "fork_session"} <= names
            r = await c.call_tool("create_session", {"language": "python"})
            assert not r.is_error, texts(r)
            sid = r.structured_content["session_id"]
            server.session_ids.add(sid)
            r = await c.call_tool("execute_code", {"session_id": sid,
                                                   "code": "x = 41\nopen('/workspace/plan.txt', 'w').write('A')"})
            assert not r.is_error, texts(r)

            r = await c.call_tool("pause_session", {"session_id": sid})
            assert not r.is_error and r.structured_content["status"] == "suspended", texts(r)
            assert "frozen with its variables" in texts(r)
            r = await c.call_tool("execute_code", {"session_id": sid, "code": "x + 1"})
            assert not r.is_error and r.structured_content["result"] == "42", texts(r)

            r = await c.call_tool("pause_session", {"session_id": sid, "mode": "hibernate"})
            assert not r.is_error and r.structured_content["status"] == "hibernated", texts(r)
            r = await c.call_tool("resume_session", {"session_id": sid})
            assert not r.is_error and r.structured_content["resume"]["interpreter"] == "restarted", texts(r)
            assert "interpreter started fresh" in texts(r)

            r = await c.call_tool("fork_session", {"session_id": sid})
            assert not r.is_error, texts(r)
            fork = r.structured_content["session_id"]
            server.session_ids.add(fork)
            assert fork != sid and r.structured_content["fork"]["from"] == sid and fork in texts(r)
            r = await c.call_tool("execute_code", {"session_id": fork, "code": "open('/workspace/plan.txt').read()"})
            assert r.structured_content["result"] == "'A'", texts(r)
            await c.call_tool("execute_code", {"session_id": fork, "code": "open('/workspace/plan.txt', 'w').write('B')"})
            r = await c.call_tool("execute_code", {"session_id": sid, "code": "open('/workspace/plan.txt').read()"})
            assert r.structured_content["result"] == "'A'", "the source never sees its fork's writes"

            r = await c.call_tool("pause_session", {"session_id": sid, "mode": "sleep"})
            assert r.is_error and "hibernate" in texts(r)
            r = await c.call_tool("fork_session", {})
            assert r.is_error and "session_id" in texts(r)

    anyio.run(main)
