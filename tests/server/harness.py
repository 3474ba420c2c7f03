"""Starting and stopping `turbospark serve` for the Python server tests.

The tests run with the packages of scripts/requirements-test.txt (the official `openai` client,
selenium, gguf), see tests/server/run_python.sh. Environment: TS_BINARY (turbospark), TS_TEST_DATA (tests/data), TS_MODELS (where
make_harmony_models.py wrote the gpt-oss models), TS_ARTIFACTS (screenshots, logs).
"""
import json
import os
import re
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

BINARY = os.environ.get("TS_BINARY", "build/turbospark")
MODELS = os.environ.get("TS_MODELS", "")
TEST_DATA = os.environ.get("TS_TEST_DATA", "tests/data")
ARTIFACTS = os.environ.get("TS_ARTIFACTS", tempfile.gettempdir())
SANITIZED = os.environ.get("TS_SANITIZED", "0") == "1"  # the ASan build: slower, so tests use less


class Server:
    """`turbospark serve ARGS --port 0` on 127.0.0.1; use as a context manager. Leaving the block stops
    it with SIGTERM and checks that it exited cleanly (exit code 0: no crash, no leak under ASan)."""

    def __init__(self, *args, threads=2):
        self.args = [BINARY, "serve", "--port", "0", "-t", str(threads), *args]
        self.log = tempfile.NamedTemporaryFile("w+", prefix="ts-serve-", suffix=".log", delete=False)
        self.proc = None
        self.port = None

    def __enter__(self):
        self.proc = subprocess.Popen(self.args, stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.time() + 120
        while self.port is None:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.logs()}")
            if time.time() > deadline:
                raise RuntimeError(f"server did not start:\n{self.logs()}")
            m = re.search(r"on http://[^:]+:(\d+)", self.logs())
            if m:
                self.port = int(m.group(1))
            else:
                time.sleep(0.1)
        return self

    def __exit__(self, *exc):
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise RuntimeError(f"server did not stop on SIGTERM:\n{self.logs()}")
        if exc[0] is None and code != 0:
            raise RuntimeError(f"server exited with {code}:\n{self.logs()}")
        self.log.close()
        os.unlink(self.log.name)
        return False

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def logs(self):
        with open(self.log.name, encoding="utf-8", errors="replace") as f:
            return f.read()

    def get(self, path, headers=None):
        """(status, body text) of a GET."""
        req = urllib.request.Request(self.url + path, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def post(self, path, body, headers=None):
        """(status, parsed JSON) of a POST of raw bytes or a JSON-able object."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, headers={"Content-Type": "application/json", **(headers or {})})
        try:
            with urllib.request.urlopen(req, timeout=300) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def metrics(self, headers=None):
        status, text = self.get("/metrics", headers)
        assert status == 200, text
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def wait_metric(self, name, predicate, timeout=30):
        deadline = time.time() + timeout
        while True:
            value = self.metrics().get(name)
            if value is not None and predicate(value):
                return value
            if time.time() > deadline:
                raise AssertionError(f"{name} = {value} after {timeout}s")
            time.sleep(0.05)


def run_cli(*args):
    """stdout of `turbospark ARGS` (which must succeed)."""
    r = subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"turbospark {' '.join(args)} failed:\n{r.stderr}")
    return r.stdout


def client(server, **kw):
    import openai
    return openai.OpenAI(base_url=server.url + "/v1", api_key=kw.pop("api_key", "none"), **kw)
