"""The MCP server's long-running work: warming recall before the first call, and running the
due lifecycle tasks on their intervals, so nobody needs cron for them.

Separate from remem/server.py because it is a thread and a child process, not a tool: the
server starts it in its lifespan and stops it on the way out.
"""

from __future__ import annotations

import sys
import tempfile
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from remem.server import Memory

# The due tasks run in a child process: a first run over a large store takes minutes, and
# connection discovery shares recall's one-per-process vector cache, so in this process it
# would hold the tools' lock all that time. A child leaves the tools answering meanwhile.
# -P: the server runs in the agent's project folder, and `-m` would put that folder first on
# sys.path (a project's own remem.py or remem/ package would run instead of remem).
TASKS_COMMAND = (sys.executable, "-P", "-m", "remem", "tasks", "--run", "--json")


class Background:
    """Warms recall, then runs the due lifecycle tasks on their intervals until stopped.

    A daemon thread; the tasks themselves run as `remem tasks --run` in a child process (same
    REMEM_HOME). A failed run is logged and tried again at the next tick, never fatal."""

    def __init__(self, memory: Memory, *, tasks: bool, warm: bool,
                 command: tuple[str, ...] = TASKS_COMMAND) -> None:
        self.memory, self.tasks, self.warm, self.command = memory, tasks, warm, command
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="remem-background", daemon=True)
        self.runs = 0

    def start(self) -> None:
        if self.tasks or self.warm:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def _run(self) -> None:
        from remem.log import log_exception

        if self.warm:
            try:
                warm_up(self.memory)
            except Exception as exc:
                log_exception("server.warm", exc)
        while self.tasks and not self._stop.is_set():
            try:
                self._run_tasks_once()
            except Exception as exc:  # cannot even start the child: try again next tick
                log_exception("server.tasks", exc)
            self._stop.wait(self._tick())

    def _run_tasks_once(self) -> None:
        import subprocess

        from remem.log import log

        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            child = subprocess.Popen(list(self.command), stdin=subprocess.DEVNULL, stdout=out, stderr=err)
            while child.poll() is None:
                if self._stop.wait(0.5):  # shutting down: the tasks are safe to cut short
                    child.terminate()
                    child.wait(timeout=10)
                    return
            out.seek(0)
            err.seek(0)
            report, problem = out.read().strip(), err.read().strip()
        self.runs += 1
        if child.returncode != 0:
            last = problem.splitlines()[-1] if problem else f"exit {child.returncode}"
            log("server.tasks", f"lifecycle tasks failed ({last}); trying again at the next tick")
        elif report:
            log("server.tasks", f"ran {' '.join(report.split())[:500]}")

    @staticmethod
    def _tick() -> float:
        """How long until the next look: the shortest task interval, between 5 s and 5 min."""
        try:
            from remem import config

            intervals = [float(v) for v in config.load().get("tasks", {}).values() if float(v) > 0]
        except Exception:
            intervals = []
        return max(5.0, min([300.0, *intervals]))


def warm_up(memory: Memory) -> None:
    """Load the embedder and recall's vector cache, so the first call is as fast as the rest.
    On the tools' own connection, under their lock: the cache is one per process."""
    from remem.engine import recall as recall_mod
    from remem.engine.embed import get_embedder

    get_embedder().encode(["warm up"])
    with memory.store() as store:
        recall_mod.recall(store, "warm up", 1, touch=False)
