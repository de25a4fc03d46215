"""A real Prometheus scraping a real node_exporter on loopback, for the metrics tests.

    with PrometheusStack(textfile_dir) as prom:
        prom.wait_for('sncheck_run_info')          # polls the API until the first scrape landed
        prom.query('count(sncheck_card_info)')     # the API's result list

node_exporter runs only its textfile collector, pointed at ``textfile_dir`` (the
``*.prom`` files there: sncheck's and a dcgm-exporter-format one); Prometheus scrapes
it every second. Both listen on free loopback ports and keep their data in a temporary
directory; both are stopped by their own process handles. Debian's packages
(``prometheus``, ``prometheus-node-exporter``) provide the binaries: scripts/setup.sh
installs them.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

PROMETHEUS = "prometheus"
NODE_EXPORTER = "prometheus-node-exporter"   # Debian's name for node_exporter
SCRAPE_INTERVAL = "1s"


def binaries() -> dict[str, str | None]:
    return {name: shutil.which(name) for name in (PROMETHEUS, NODE_EXPORTER, "promtool")}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StackError(RuntimeError):
    pass


class PrometheusStack:
    def __init__(self, textfile_dir: Path, timeout: float = 60.0) -> None:
        self.textfile_dir = Path(textfile_dir)
        self.timeout = timeout
        self.procs: list[subprocess.Popen] = []
        self.logs: list = []
        self.base = ""

    # ---- start and stop --------------------------------------------------------------

    def __enter__(self) -> "PrometheusStack":
        self.tmp = Path(tempfile.mkdtemp(prefix="sncheck-prom-"))
        try:
            exporter = self._start(lambda port: [
                shutil.which(NODE_EXPORTER) or NODE_EXPORTER, "--collector.disable-defaults",
                "--collector.textfile", f"--collector.textfile.directory={self.textfile_dir}",
                f"--web.listen-address=127.0.0.1:{port}"], "node_exporter")
            config = self.tmp / "prometheus.yml"
            config.write_text(json.dumps({  # YAML is a superset of JSON
                "global": {"scrape_interval": SCRAPE_INTERVAL, "scrape_timeout": SCRAPE_INTERVAL,
                           "evaluation_interval": SCRAPE_INTERVAL},
                "scrape_configs": [{"job_name": "node", "static_configs": [{"targets": [f"127.0.0.1:{exporter}"]}]}]}))
            port = self._start(lambda port: [
                shutil.which(PROMETHEUS) or PROMETHEUS, f"--config.file={config}",
                f"--storage.tsdb.path={self.tmp / 'data'}", f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn"], "prometheus", ready="/-/ready")
            self.base = f"http://127.0.0.1:{port}"
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self.procs = []
        for log in self.logs:
            log.close()
        self.logs = []
        shutil.rmtree(getattr(self, "tmp", ""), ignore_errors=True)

    def _start(self, argv_for, name: str, ready: str = "/metrics", attempts: int = 3) -> int:
        """Start a server on a free port; another port if it lost the port to a race."""
        for _ in range(attempts):
            port = free_port()
            log = open(self.tmp / f"{name}-{port}.log", "w+")
            self.logs.append(log)
            proc = subprocess.Popen(argv_for(port), stdout=log, stderr=subprocess.STDOUT, cwd=self.tmp)
            self.procs.append(proc)
            deadline = time.monotonic() + self.timeout
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}{ready}", timeout=2) as r:
                        if r.status == 200:
                            return port
                except (urllib.error.URLError, OSError):
                    time.sleep(0.1)
            if proc.poll() is None:
                raise StackError(f"{name} did not answer on port {port} in {self.timeout:.0f}s")
            log.seek(0)
            tail = log.read()[-2000:]
            if "address already in use" not in tail:
                raise StackError(f"{name} exited {proc.returncode}: {tail}")
        raise StackError(f"{name}: no free port after {attempts} attempts")

    # ---- the HTTP API ----------------------------------------------------------------

    def query(self, promql: str) -> list[dict[str, Any]]:
        """An instant query; its result vector (``[{"metric": {...}, "value": [t, "v"]}]``)."""
        url = f"{self.base}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                body = json.load(r)
        except urllib.error.HTTPError as e:  # a bad query: Prometheus says why
            raise AssertionError(f"{promql}: {e.code} {e.read().decode(errors='replace')}") from e
        assert body["status"] == "success", body
        result = body["data"]["result"]
        return result if body["data"]["resultType"] == "vector" else [{"metric": {}, "value": result}]

    def wait_for(self, promql: str, timeout: float | None = None) -> list[dict[str, Any]]:
        """Poll until ``promql`` returns data (the scrape landed), with a deadline."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            result = self.query(promql)
            if result:
                return result
            if time.monotonic() > deadline:
                raise StackError(f"no data for {promql!r} within {timeout or self.timeout:.0f}s")
            for proc in self.procs:
                if proc.poll() is not None:
                    raise StackError(f"{proc.args[0]} exited {proc.returncode}")
            time.sleep(0.2)
