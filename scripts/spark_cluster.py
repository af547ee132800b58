"""A Spark standalone cluster on this machine: one master and N one-core workers, each its own JVM, on 127.0.0.1.

Lakescout's stages are ordinary ``spark-submit`` applications; this cluster is where they are exercised the way a
real one runs them (executors in other JVMs, in their own working folders, talking to the driver over the network)
without a container engine.  It uses the Spark of the installed ``pyspark`` package (``bin/spark-class``), so the
master, the workers and the driver are the same Spark version.

    python scripts/spark_cluster.py up   [--dir build/spark-cluster] [--port 7077] [--webui-port 8090] [--workers 2]
    python scripts/spark_cluster.py down [--dir build/spark-cluster]
    python scripts/spark_cluster.py status [--dir build/spark-cluster]

``up`` returns once every worker has registered with the master and prints the master URL (``--json``: the state
record); port 0 picks a free port.  The state (pids, ports, logs, worker folders) lives in ``--dir``; ``down`` stops
exactly the processes ``up`` started, with the executors and Python workers they spawned (each daemon leads its own
process group).  ``make cluster-up`` / ``make cluster-down`` run this script.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

HOST = "127.0.0.1"
STATE = "cluster.json"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def daemon_env(local: Path) -> dict:
    """Environment of a master or worker JVM: this Spark, loopback only, executors on this Python, scratch space in
    ``local``, made here.  Each daemon gets its own: two workers creating one shared folder at the same moment made
    one of them fail every executor launch ("Failed to create dir ... No subfolder can be created") and retry
    without end."""
    local.mkdir(parents=True, exist_ok=True)
    return dict(os.environ, SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP=HOST, SPARK_DAEMON_MEMORY="512m",
                SPARK_LOCAL_DIRS=str(local), PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", sys.executable))


def start(args: list[str], log: Path, env: dict) -> int:
    with open(log, "ab") as out:
        proc = subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    return proc.pid


def master_status(webui_port: int) -> dict | None:
    try:
        with urllib.request.urlopen(f"http://{HOST}:{webui_port}/json/", timeout=5) as resp:
            return json.load(resp)
    except (urllib.error.URLError, OSError, ValueError):
        return None


def alive(pid: int) -> bool:
    """True when ``pid`` is still one of this cluster's Spark daemons (not a reused pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"org.apache.spark.deploy." in cmdline


def load_state(folder: Path) -> dict | None:
    path = folder / STATE
    return json.loads(path.read_text()) if path.exists() else None


def stop(folder: Path, grace: float = 20.0) -> list[int]:
    """Stop the daemons recorded in ``folder`` (SIGTERM to each process group, SIGKILL after ``grace`` seconds)."""
    state = load_state(folder)
    if state is None:
        return []
    pids = [p for p in state["pids"] if alive(p)]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.killpg(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.time() + grace
        while time.time() < deadline and any(alive(p) for p in pids):
            time.sleep(0.2)
        if not any(alive(p) for p in pids):
            break
    (folder / STATE).unlink()
    return pids


def up(folder: Path, port: int, webui_port: int, workers: int, cores: int, memory: str, timeout: float) -> dict:
    state = load_state(folder)
    if state is not None and all(alive(p) for p in state["pids"]):
        return state
    if state is not None:
        stop(folder)
    folder.mkdir(parents=True, exist_ok=True)
    port, webui_port = port or free_port(), webui_port or free_port()
    url = f"spark://{HOST}:{port}"
    pids = [start([MASTER_CLASS, "--host", HOST, "--port", str(port), "--webui-port", str(webui_port)],
                  folder / "master.log", daemon_env(folder / "local" / "master"))]
    state = {"master": url, "webui": f"http://{HOST}:{webui_port}", "webui_port": webui_port, "pids": pids,
             "workers": workers, "cores": cores, "folder": str(folder.resolve())}
    (folder / STATE).write_text(json.dumps(state, indent=2))
    for i in range(1, workers + 1):
        work = folder / f"worker-{i}"
        work.mkdir(exist_ok=True)
        pids.append(start([WORKER_CLASS, "--host", HOST, "--cores", str(cores), "--memory", memory,
                           "--work-dir", str(work), "--webui-port", "0", url], folder / f"worker-{i}.log",
                          daemon_env(folder / "local" / f"worker-{i}")))
        (folder / STATE).write_text(json.dumps(state, indent=2))
    deadline = time.time() + timeout
    while time.time() < deadline:
        status = master_status(webui_port)
        if status and status.get("aliveworkers") == workers and status.get("cores") == workers * cores:
            return state
        if not all(alive(p) for p in pids):
            break
        time.sleep(1)
    stop(folder)
    logs = "\n".join(f"== {log.name}\n" + log.read_text()[-2000:] for log in sorted(folder.glob("*.log")))
    raise RuntimeError(f"the Spark cluster did not come up with {workers} worker(s) within {timeout:.0f} s\n{logs}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="spark_cluster", description=__doc__.split("\n\n")[0])
    p.add_argument("command", choices=["up", "down", "status"])
    p.add_argument("--dir", default="build/spark-cluster",
                   help="state, logs and worker folders (default build/spark-cluster)")
    p.add_argument("--port", type=int, default=7077, help="master port (0: a free one)")
    p.add_argument("--webui-port", type=int, default=8090, help="master web UI port (0: a free one)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--cores", type=int, default=1, help="cores per worker")
    p.add_argument("--memory", default="2g", help="memory per worker (executors get spark.executor.memory of it)")
    p.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for the workers to register")
    p.add_argument("--json", action="store_true", help="print the state record instead of the master URL")
    args = p.parse_args(argv)
    folder = Path(args.dir)
    if args.command == "down":
        stopped = stop(folder)
        print(f"stopped {len(stopped)} Spark daemon(s)" if stopped else "no Spark cluster running in " + str(folder))
        return 0
    if args.command == "status":
        state = load_state(folder)
        running = state is not None and all(alive(p) for p in state["pids"])
        print(json.dumps({**state, "status": master_status(state["webui_port"])}, indent=2) if running
              else "no Spark cluster running in " + str(folder))
        return 0 if running else 1
    try:
        state = up(folder, args.port, args.webui_port, args.workers, args.cores, args.memory, args.timeout)
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(json.dumps(state) if args.json else state["master"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
