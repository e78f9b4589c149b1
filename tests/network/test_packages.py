"""Installing packages from inside a networked sandbox through its egress proxy, from the
test-made internet's index (https://pypi.example.test/simple) and npm registry
(https://registry.example.test), both allowed by the operator's default list: `!pip`, `%pip`
and pip in bash, then an import in the next cell; npm in bash and from a javascript session,
then require. And the sealed session's pip refusal, which says how to get a network."""

from __future__ import annotations

from nettest import short

INDEX = "https://pypi.example.test/simple"
REGISTRY = "https://registry.example.test"


def test_bang_pip_install_then_import(egress_server, inet):
    sid = egress_server.create(network=True)["session_id"]
    doc = egress_server.run(sid, f"!pip install --index-url {INDEX} rbnetpkg\n_exit_code", timeout=300)
    assert doc["status"] == "completed" and doc["result"] == "0", short(doc)
    assert "Successfully installed rbnetpkg-1.0" in doc["stdout"], short(doc)
    assert inet.requests_seen("pypi", "/files/rbnetpkg-1.0-py3-none-any.whl")
    assert egress_server.value(sid, "import rbnetpkg\nrbnetpkg.VALUE") == 42


def test_percent_pip_install_then_import(egress_server, inet):
    sid = egress_server.create(network=True)["session_id"]
    doc = egress_server.run(sid, f"%pip install --index-url {INDEX} rbnetmagic", timeout=300)
    assert doc["status"] == "completed" and "Successfully installed rbnetmagic-1.0" in doc["stdout"], short(doc)
    assert egress_server.value(sid, "import rbnetmagic\nrbnetmagic.VALUE") == "installed by %pip"


def test_pip_in_bash_then_import(egress_server, inet):
    sid = egress_server.create(language="bash", network=True)["session_id"]
    doc = egress_server.run(sid, f"pip install --index-url {INDEX} rbnetbash", timeout=300)
    assert doc["status"] == "completed" and "Successfully installed rbnetbash-1.0" in doc["stdout"], short(doc)
    doc = egress_server.ok(sid, "python3 -c 'import rbnetbash; print(rbnetbash.VALUE)'")
    assert doc["stdout"] == "installed by pip in bash\n", short(doc)


def test_pip_from_an_index_the_policy_does_not_allow(egress_server, inet):
    """pip fails, and its output shows the proxy's refusal (403), not only 'no matching
    distribution' (download: install would stop earlier in a sealed-looking way; one retry:
    pip reports a connection problem when it retries)."""
    sid = egress_server.create(language="bash", network={"allow": ["www.example.test"]})["session_id"]
    before = len(inet.requests_seen("pypi", "/simple/rbnetbash"))
    doc = egress_server.run(sid, f"pip download --no-deps -d /tmp/dl --retries 1 --index-url {INDEX} rbnetbash", timeout=300)
    assert doc["status"] == "error", short(doc)
    assert "403" in doc["stdout"] + doc["stderr"], short(doc)
    assert len(inet.requests_seen("pypi", "/simple/rbnetbash")) == before, "refused, yet the index saw it"


def test_npm_install_in_bash_then_require(egress_server, inet):
    sid = egress_server.create(language="bash", network=True)["session_id"]
    doc = egress_server.run(sid, f"cd /workspace && npm install --no-audit --no-fund --registry {REGISTRY} rbnetnpm",
                            timeout=300)
    assert doc["status"] == "completed", short(doc)
    assert inet.requests_seen("registry", "/rbnetnpm/-/rbnetnpm-1.0.0.tgz")
    doc = egress_server.ok(sid, "cd /workspace && node -e \"console.log(require('rbnetnpm').value)\"")
    assert doc["stdout"] == "42\n", short(doc)


def test_npm_install_then_require_in_javascript_session(egress_server, inet):
    """npm from a javascript cell (child_process) into the session's node_modules
    (/workspace/.runbox, on NODE_PATH), then `require` in the next cell."""
    sid = egress_server.create(language="javascript", network=True)["session_id"]
    doc = egress_server.run(sid, "const { execFileSync } = require('child_process');\n"
                            "execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefix', '/workspace/.runbox', "
                            f"'--registry', '{REGISTRY}', 'rbnetnpm'], {{ stdio: 'inherit' }});\n'done'", timeout=300)
    assert doc["status"] == "completed" and doc["result"] == "'done'", short(doc)
    doc = egress_server.ok(sid, "require('rbnetnpm').value")
    assert doc["result"] == "42", short(doc)


def test_sealed_session_pip_names_the_policy_to_ask_for(egress_server, inet):
    """In a session without a network, pip refuses at once and says how to get one
    (execution_options.network), whether from a shell line, %pip or bash."""
    py = egress_server.create()["session_id"]
    doc = egress_server.run(py, f"!pip install --index-url {INDEX} rbnetpkg", timeout=120)
    assert doc["status"] == "error" and doc["error"]["ename"] == "UsageError", short(doc)  # as %pip (issue 42)
    refusal = doc["error"]["evalue"]
    assert "needs a package index" in refusal and "execution_options.network" in refusal, short(doc)
    assert '{"allow": [' in refusal, f"the refusal should spell out a policy: {short(doc)}"
    assert "cannot help" not in refusal, f"the index named is not pypi.org: {short(doc)}"
    doc = egress_server.run(py, f"%pip install --index-url {INDEX} rbnetpkg", timeout=120)
    assert doc["status"] == "error" and doc["error"]["ename"] == "UsageError", short(doc)
    assert "execution_options.network" in doc["error"]["evalue"] and '{"allow": [' in doc["error"]["evalue"], short(doc)
    sh = egress_server.create(language="bash")["session_id"]
    doc = egress_server.run(sh, f"pip install --index-url {INDEX} rbnetbash", timeout=120)
    assert doc["status"] == "error" and "execution_options.network" in doc["stderr"], short(doc)
    assert '{"allow": [' in doc["stderr"], short(doc)
