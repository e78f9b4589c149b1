"""smolagents' E2B executor (smolagents[e2b]) against runboxd's /e2b, unmodified: a CodeAgent
with executor_type="e2b" and a scripted model (a Model subclass answering ChatMessage steps with
<code> blocks), E2B's SDK pointed at runboxd by its environment alone (E2B_API_URL,
E2B_SANDBOX_URL, E2B_API_KEY; docs/e2b.md).

The executor sends, in order: `!pip install <authorized imports>`, `!pip install` of its tools'
packages, ~6 KB of tool definitions, then each action; the final answer comes back as an error
named FinalAnswerException. The sandbox has no network: the `!pip install` lines (of packages
the image already has) answer on stderr and raise nothing, as a shell command does in IPython.
"""

from __future__ import annotations

import pytest
from e2b_code_interpreter import Sandbox
from smolagents import CodeAgent, Model
from smolagents.models import ChatMessage, MessageRole

from conftest import ALICE
from rbfixtures import point_e2b_sdk_at

STEPS = [
    "Thought: sum with numpy.\n<code>\nimport numpy as np\nx = int(np.arange(5).sum())\nprint('x is', x)\n</code>",
    "Thought: a mistake.\n<code>\nprint(undefined_name)\n</code>",
    "Thought: plot it.\n<code>\nimport matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
    "plt.plot(range(x))\nplt.savefig('plot.png')\nimport os\nprint('png bytes', os.path.getsize('plot.png'))\n</code>",
    "Thought: done.\n<code>\nfinal_answer(x * 2)\n</code>",
]


class ScriptedModel(Model):
    """Answers STEPS in turn and keeps what the agent showed it (the observations)."""

    def __init__(self):
        super().__init__(model_id="scripted")
        self.turn = 0
        self.prompts: list[list] = []

    def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs):
        self.prompts.append(messages)
        step = STEPS[self.turn]
        self.turn += 1
        return ChatMessage(role=MessageRole.ASSISTANT, content=step)


@pytest.fixture
def sent(monkeypatch, server):
    """E2B's SDK pointed at runboxd, and every (code, execution) the executor sent through it."""
    point_e2b_sdk_at(monkeypatch, server, ALICE)
    calls: list[tuple[str, object]] = []
    run_code = Sandbox.run_code

    def recording(self, code, *args, **kwargs):
        ex = run_code(self, code, *args, **kwargs)
        calls.append((code, ex))
        return ex

    monkeypatch.setattr(Sandbox, "run_code", recording)
    return calls


def test_a_code_agent_runs_its_steps_in_a_runbox_sandbox(server, sent):
    model = ScriptedModel()
    agent = CodeAgent(tools=[], model=model, executor_type="e2b", max_steps=6,
                      additional_authorized_imports=["numpy", "matplotlib"])
    sid = agent.python_executor.sandbox.sandbox_id
    server.session_ids.add(sid)
    try:
        assert server.session(sid)["status"] in ("ready", "busy")  # the sandbox is alice's runbox session
        answer = agent.run("What is twice the sum of 0..4? Plot range of the sum too.")
    finally:
        agent.cleanup()
    assert answer == 20 and model.turn == len(STEPS)

    codes = [c for c, _ in sent]
    pips = [c for c in codes if c.startswith("!pip install")]
    assert pips and "numpy" in pips[0] and "matplotlib" in pips[0], codes[:3]
    for code, ex in sent:
        if code.startswith("!pip install"):
            assert ex.error is None, (code, ex.error)  # a shell line: its failure is text, not an error
    assert any("class FinalAnswerTool" in c or "final_answer" in c for c in codes[len(pips):]), codes

    steps = [s for s in agent.memory.steps if type(s).__name__ == "ActionStep"]
    assert "x is 10" in steps[0].observations
    assert steps[1].error is not None and "undefined_name" in str(steps[1].error)
    assert any("undefined_name" in str(p) for p in model.prompts[2]), "the model saw the error"
    assert "png bytes" in steps[2].observations
    assert int(steps[2].observations.split("png bytes")[1].split()[0]) > 1000

    # cleanup() killed the sandbox: the session ended
    assert server.session(sid)["status"] == "ended"
