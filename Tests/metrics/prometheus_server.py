"""A real Prometheus server (Debian's `prometheus` package) on a simulated host, scraping one
target every second, and its HTTP API as the test reads it."""

import json
import os
import shutil
import subprocess
import time
import urllib.parse

from lanharness import Host, LanError, wait_until


def missing_prometheus() -> list[str]:
    """What is missing to run a Prometheus server here."""
    return [tool for tool in ("prometheus", "promtool", "curl") if shutil.which(tool) is None]


class PrometheusServer:
    """`prometheus` on `host`, listening on 127.0.0.1:`port` there, scraping `target`
    (`ADDR:PORT` as seen from that host) every second, with its data in a temp folder; with
    `rule_files`, it loads those rules and evaluates them every second."""

    def __init__(self, host: Host, target: str, port: int = 9090, rule_files: list[str] | None = None):
        self.host = host
        self.port = port
        self.dir = os.path.join(host.dir, f"prometheus-{int(time.time() * 1000)}")
        os.makedirs(os.path.join(self.dir, "data"))
        self.config = os.path.join(self.dir, "prometheus.yml")
        with open(self.config, "w") as f:
            f.write(
                "global:\n"
                "  scrape_interval: 1s\n"
                "  scrape_timeout: 1s\n"
                "  evaluation_interval: 1s\n"
                + (f"rule_files: [{', '.join(repr(path) for path in rule_files)}]\n" if rule_files else "")
                + "scrape_configs:\n"
                "  - job_name: ordersync\n"
                "    static_configs:\n"
                f"      - targets: ['{target}']\n")
        self.log_path = os.path.join(self.dir, "prometheus.log")
        self.log = open(self.log_path, "ab")
        self.process = host.popen(
            ["prometheus", f"--config.file={self.config}", f"--storage.tsdb.path={os.path.join(self.dir, 'data')}",
             f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
            stdout=self.log, stderr=self.log)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()

    def _get(self, path: str, params: dict | None = None) -> dict:
        if self.process.poll() is not None:
            with open(self.log_path, errors="replace") as f:
                raise LanError(f"prometheus exited {self.process.returncode}: {f.read()[-2000:]}")
        url = f"http://127.0.0.1:{self.port}{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        result = self.host.run(["curl", "-s", "--max-time", "5", url], check=False)
        if result.returncode != 0 or not result.stdout:
            return {"status": "unreachable", "curl": result.returncode}
        try:
            return json.loads(result.stdout)
        except ValueError:
            # Until its storage and rules are loaded Prometheus answers 503 "Service Unavailable"
            # in plain text: not ready yet, as an unreachable one.
            return {"status": "not ready", "body": result.stdout[:200]}

    def query(self, promql: str) -> list[dict]:
        """`/api/v1/query`: the instant vector's samples (empty while not answerable)."""
        answer = self._get("/api/v1/query", {"query": promql})
        if answer.get("status") != "success":
            return []
        return answer["data"]["result"]

    def value(self, promql: str) -> float | None:
        """The single sample of `promql`, or None."""
        samples = self.query(promql)
        return float(samples[0]["value"][1]) if len(samples) == 1 else None

    def wait_value(self, promql: str, expected: float, timeout: float = 30) -> None:
        """Polls the query until its single sample equals `expected`."""
        last: list[dict] = []

        def reached() -> bool:
            last[:] = self.query(promql)
            return len(last) == 1 and float(last[0]["value"][1]) == expected
        try:
            wait_until(reached, timeout, interval=0.25, what=f"{promql} == {expected}")
        except LanError as error:
            raise LanError(f"{error}; Prometheus's last answer: {last}") from None

    def targets(self) -> list[dict]:
        """The active scrape targets with their health."""
        answer = self._get("/api/v1/targets")
        return answer.get("data", {}).get("activeTargets", []) if answer.get("status") == "success" else []
