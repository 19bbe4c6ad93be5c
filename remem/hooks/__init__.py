"""`remem hook prompt|pre-tool|stop|session-end [--agent NAME]`: the fast path.

Runs on every prompt and tool call of someone's agent, so it imports only what it needs
(no typer, rich, textual, mcp, tomlkit, numpy, sqlite_utils) and it fails open: any error,
bad or empty or huge input, a missing, locked or corrupt store, a usage error -> exit 0,
nothing (or the agent's harmless "carry on" JSON) on stdout, one line to stderr and the log.
It never exits 2, which would block the person's prompt. Past its time budget
(config prime.timeout_ms, cut to config.hook_budget_cap_ms: less than the timeout `remem
setup` gives the agent) it gives up and prints nothing, saying so in that one line; SIGTERM
ends it at once, a wait for a lock included.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from remem.hooks import adapters

MAX_STDIN = 2_000_000  # bytes of the agent's JSON we read; the rest is drained unread
DEFAULT_BUDGET_MS = 1000  # prime.timeout_ms when the config cannot say
EVENTS = ("prompt", "pre-tool", "stop", "session-end")
USAGE = (
    "usage: remem hook prompt|pre-tool|stop|session-end [--agent claude-code|codex|gemini|cursor]\n"
    "Reads the agent's hook JSON on stdin and prints the agent's hook JSON on stdout.\n"
    "Wire it with `remem setup`; check it with `remem doctor`.\n"
    "Example: echo '{\"prompt\": \"run the tests\", \"session_id\": \"s1\"}' | remem hook prompt"
)
MODULES_ENV = "REMEM_HOOK_MODULES_OUT"  # tests: dump sys.modules here at exit
# The longest SQLite waits for a lock in one go; the hook's store waits again in Python, step
# after step, until its budget is spent. A signal's handler (SIGTERM's) runs only between them.
LOCK_STEP_MS = 50


class UsageError(Exception):
    pass


class Terminated(BaseException):
    """SIGTERM arrived (the agent gave up on the hook): unwind, log, exit 0."""


def _parse(argv: list[str]) -> tuple[str, str]:
    event = None
    agent = "claude-code"
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--agent" and i + 1 < len(argv):
            agent = argv[i + 1]
            i += 2
            continue
        if arg.startswith("--agent="):
            agent = arg.split("=", 1)[1]
        elif arg.startswith("-") or event is not None:
            raise UsageError(f"unexpected argument {arg!r}")
        else:
            event = arg
        i += 1
    if event is None:
        raise UsageError(f"name the hook event: one of {', '.join(EVENTS)} (agents call this; "
                         "`remem setup` wires it)")
    if event not in EVENTS:
        raise UsageError(f"unknown hook event {event!r}; use one of {', '.join(EVENTS)}")
    if agent not in adapters.AGENTS:
        raise UsageError(f"unknown agent {agent!r}; use one of {', '.join(adapters.AGENTS)}")
    return event, agent


def _read_stdin(deadline: float | None = None, within: str = "prime.timeout_ms") -> bytes:
    """The agent's JSON from stdin. Stops once a whole JSON object has arrived, at end of
    input, or at `deadline` (time.monotonic()): an agent that keeps stdin open after writing
    its payload (or never writes it) costs the hook its budget, not more. `within`: that
    budget, as the line that gives up names it."""
    stream = sys.stdin.buffer if sys.stdin is not None else None
    if stream is None:
        return b""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # not a real descriptor (tests, embedders)
        fd = None
    import select

    if fd is None or deadline is None or not hasattr(select, "poll"):
        data = stream.read(MAX_STDIN + 1)
        if len(data) > MAX_STDIN:
            # Drain the rest so the agent's write never fails on a closed pipe; keep nothing.
            while stream.read(1 << 20):
                pass
            raise ValueError(f"hook input larger than {MAX_STDIN} bytes; ignored")
        return data
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLPRI)
    chunks: list[bytes] = []
    size = 0
    while True:
        left_ms = int((deadline - time.monotonic()) * 1000)
        if left_ms <= 0:
            if size > MAX_STDIN:
                raise ValueError(f"hook input larger than {MAX_STDIN} bytes; ignored")
            raise TimeoutError(
                f"the hook input did not end within {within}: {size} bytes read, stdin "
                "still open, no complete JSON object; nothing done")
        if not poller.poll(left_ms):
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        if size > MAX_STDIN:  # draining what is over the cap, unkept, until the end or the deadline
            continue
        size += len(chunk)
        if size > MAX_STDIN:
            chunks = []
            continue
        chunks.append(chunk)
        # (NULs too: UTF-16's "}" is b"}\x00" in little-endian order)
        if chunk.rstrip(b" \t\r\n\x00").endswith(b"}") and _complete(b"".join(chunks)):
            break
    if size > MAX_STDIN:
        raise ValueError(f"hook input larger than {MAX_STDIN} bytes; ignored")
    return b"".join(chunks)


def _decode(data: bytes) -> str:
    """The agent's bytes as text: UTF-8, without the byte order mark some shells and editors
    put before it; UTF-16 when it starts with its own (Windows PowerShell's pipes)."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return data.decode("utf-16", errors="replace")
    if data[:3] == b"\xef\xbb\xbf":  # what "utf-8-sig" drops, without loading its codec
        data = data[3:]
    return data.decode("utf-8", errors="replace")


def _complete(data: bytes) -> bool:
    """Whether `data` is one whole JSON object already (the agent may keep stdin open)."""
    try:
        return isinstance(json.loads(_decode(data)), dict)
    except ValueError:
        return False


def _payload(raw: bytes) -> dict[str, Any]:
    text = _decode(raw)
    if not text.strip():
        raise ValueError("empty hook input (expected the agent's JSON on stdin)")
    try:
        value = json.loads(text)
    except ValueError:
        raise ValueError("hook input is not JSON; nothing done") from None
    if not isinstance(value, dict):
        raise ValueError("hook input is not a JSON object; nothing done")
    return value


def _note(message: str) -> None:
    """One line to stderr and to the log; never raises."""
    try:
        print(f"remem hook: {message}", file=sys.stderr)
    except Exception:
        pass
    try:
        from remem import paths
        from remem.log import log

        # A home that is not there stays not there: logging into it would create it, and a
        # mistyped REMEM_HOME would then pass the reading commands' check for a missing home.
        if paths.home().is_dir():
            log("hook", message)
    except Exception:
        pass


def _describe(exc: BaseException) -> str:
    """A failure as one line: a damaged, busy or read-only memory names its fix."""
    try:
        from remem.errors import store_problem

        found = store_problem(exc)
    except Exception:
        found = None
    return found[1] if found else f"{type(exc).__name__}: {exc}"


def _dump_modules() -> None:
    target = os.environ.get(MODULES_ENV)
    if target:
        try:
            with open(target, "w", encoding="utf-8") as fh:
                fh.write("\n".join(sorted(sys.modules)))
        except OSError:
            pass


def _emit(text: str) -> None:
    if text:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


def _stdout_problem() -> str | None:
    """Why nothing written to stdout would reach the agent (closed, or its reader gone), or
    None. Checked before a decision is recorded: a lesson recorded as shown must be shown."""
    out = sys.stdout
    if out is None:
        return "stdout is closed"
    try:
        fd = out.fileno()
        os.fstat(fd)
    except (AttributeError, OSError, ValueError):
        # No descriptor at all (an in-process caller's StringIO) is fine; a closed one is not.
        return "stdout is closed" if _has_fileno(out) else None
    import select

    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        for _, events in poller.poll(0):
            if events & (select.POLLERR | select.POLLHUP | select.POLLNVAL):
                return "nobody reads stdout (the pipe's reader is gone)"
    return None


def _has_fileno(stream: Any) -> bool:
    try:
        stream.fileno()
    except (AttributeError, ValueError):
        return False
    except OSError:
        return True
    return True


def _budget(event: str = "prompt") -> tuple[float, str]:
    """The hook's budget in ms, prime.timeout_ms (at most config.hook_budget_cap_ms(event)),
    and what a line that gives up calls it; the default budget when the config cannot be read
    (run() reports that)."""
    budget, said = float(DEFAULT_BUDGET_MS), "prime.timeout_ms"
    try:
        from remem import config

        # The first parse, cached for the hook's later reads: a misspelt key is doctor's to
        # name, not every prompt's.
        wanted = config.load(warn=False)["prime"]["timeout_ms"]
        budget = config.hook_budget_ms(wanted, event)
        if config.hook_budget_said(wanted, event) != said:  # the cap, not prime.timeout_ms
            said = f"the hook's budget ({budget:.0f} ms: {config.hook_budget_said(wanted, event)})"
    except Exception:
        pass
    return max(0.0, budget), said


def _on_sigterm(signum: int, frame: Any) -> None:
    try:
        import _signal

        _signal.signal(_signal.SIGTERM, _signal.SIG_IGN)  # a second one must not cut the unwinding short
    except Exception:
        pass
    raise Terminated("terminated by SIGTERM (the agent stopped waiting); nothing shown")


_UNSET = object()


def _catch_sigterm() -> Any:
    """SIGTERM unwinds the hook like any failure (rolled back, logged, exit 0); returns the
    handler it replaced (to put back), or _UNSET when it cannot be set (not the main thread)."""
    try:
        import _signal  # the C module Python loads at start: `signal` would add an import

        return _signal.signal(_signal.SIGTERM, _on_sigterm)
    except (ImportError, AttributeError, ValueError, OSError):
        return _UNSET


def _restore_sigterm(previous: Any) -> None:
    if previous is _UNSET:
        return
    try:
        import _signal

        # None: a handler not set from Python (there is none to put back); the default then.
        _signal.signal(_signal.SIGTERM, _signal.SIG_DFL if previous is None else previous)
    except (ImportError, AttributeError, ValueError, OSError, TypeError):
        pass


def main(argv: list[str] | None = None) -> int:
    """Run one hook; always returns 0."""
    start = time.monotonic()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0
    agent = "claude-code"
    event = ""
    previous = _catch_sigterm()
    try:
        try:
            event, agent = _parse(argv)
        except UsageError as exc:
            _note(f"{exc}\n{USAGE}".splitlines()[0])
            return 0
        if sys.stdin is not None and sys.stdin.isatty():
            _note("no hook input on stdin (hooks are run by an agent); see `remem hook --help`")
            _emit(adapters.neutral(agent, event))
            return 0
        budget_ms, within = _budget(event)
        payload = _payload(_read_stdin(start + budget_ms / 1000.0, within))
        if event != "session-end":
            gone = _stdout_problem()
            if gone:
                # What is recorded as shown must be shown: nothing is chosen nor recorded.
                _note(f"{event} ({agent}) skipped: {gone}; nothing shown or recorded")
                return 0
        out = run(event, agent, payload, start=start)
        _emit(out)
    except BaseException as exc:  # fail open, whatever happened (KeyboardInterrupt, SIGTERM included)
        try:
            _note(f"{event or 'hook'} ({agent}) skipped: {_describe(exc)}"[:500])
            _emit(adapters.neutral(agent, event))
        except BaseException:
            pass
    finally:
        _dump_modules()
        _restore_sigterm(previous)
    return 0


def run(event: str, agent: str, payload: dict[str, Any], *, start: float | None = None) -> str:
    """The stdout text for one hook call ("" when there is nothing to say)."""
    start = time.monotonic() if start is None else start
    if event == "session-end":
        from remem.hooks.session_end import spawn_ingest

        spawn_ingest(payload, agent)
        return adapters.neutral(agent, event)
    call = adapters.read(agent, event, payload)
    if call is None or not call.text:
        return adapters.neutral(agent, event)

    from remem import config, paths

    cfg = config.load(warn=False)
    pc = cfg["prime"]
    if event == "stop" and (not pc.get("stop_block", True) or call.stop_hook_active):
        return adapters.neutral(agent, event)
    budget_ms = config.hook_budget_ms(pc["timeout_ms"], event)
    deadline = start + budget_ms / 1000.0
    db = paths.db_path()
    if not db.exists():
        # The home named as the hook's own command names it (`remem --home DIR hook …`, or
        # REMEM_HOME): a bare `remem ingest` would fill the default memory instead.
        import shlex

        named = "" if paths.home() == paths.user_home() / ".remem" else f"--home {shlex.quote(str(paths.home()))} "
        raise FileNotFoundError(f"no memory yet at {db}; run `remem {named}ingest` first")

    from remem.engine import prime
    from remem.engine.store import Store

    # Not closed here: the last connection's close checkpoints the WAL (~10 ms), which the
    # next writer can do instead; `remem hook` leaves through os._exit (remem/entry.py).
    # Reads never wait in WAL; only recording the decision writes. It may wait for another
    # writer (a sleep, an ingest) for what is left of the budget, not more, LOCK_STEP_MS at a
    # time in SQLite: the agent's SIGTERM is handled between steps, not after the whole wait.
    left_ms = int((deadline - time.monotonic()) * 1000)
    # create=False: a hook never creates nor initialises a memory (an empty file included).
    store = Store(db, busy_timeout_ms=max(50, left_ms), create=False, busy_step_ms=LOCK_STEP_MS)
    try:
        result = prime.select(
            store, call.text, event=event, cwd=call.cwd, session_id=call.session_id,
            transcript_path=call.transcript_path, command=call.command, agent=agent, cfg=cfg,
            deadline=deadline,
            # `remem doctor` runs the wired hooks with this set: a check, not a decision.
            record=not os.environ.get("REMEM_HOOK_PREVIEW"),
        )
    except Exception as exc:
        text = str(exc).lower()
        if "locked" in text or "busy" in text:  # sqlite3.OperationalError, its budget spent
            raise TimeoutError("the memory stayed busy (another remem process is writing) past "
                               f"the hook's budget ({budget_ms:.0f} ms: "
                               f"{config.hook_budget_said(pc['timeout_ms'], event)}); "
                               "nothing shown this time") from None
        raise
    # select() checked the deadline before recording; once the decision is in `primes` it is
    # shown, even if the write finished a little late, so the log never claims a lesson was
    # shown that the agent never saw.
    preview = bool(os.environ.get("REMEM_HOOK_PREVIEW"))
    if result.get("late") or (preview and not result["lessons"] and time.monotonic() > deadline):
        # A lesson chosen too late is dropped, as every give-up is said: one line. `remem
        # doctor`'s check chooses nothing from its sample, so it is told when it ran too long.
        _note(f"{event} ({agent}) skipped: " + _late_line(
            pc["timeout_ms"], event, budget_ms, chosen=bool(result.get("late"))))
        return adapters.neutral(agent, event)
    if not result["text"]:
        return adapters.neutral(agent, event)
    return adapters.render(agent, event, result["text"])


def _late_line(timeout_ms: Any, event: str, budget_ms: float, *, chosen: bool) -> str:
    """Why nothing was shown when the hook ran past its budget (`chosen`: a lesson had been
    chosen), and what gives it longer: a higher prime.timeout_ms, up to the cap."""
    from remem import config

    when = ("when its lesson was chosen; nothing shown this time" if chosen else
            "before it had chosen; a lesson chosen this late is not shown")
    said = f"past the hook's budget ({budget_ms:.0f} ms: {config.hook_budget_said(timeout_ms, event)}) {when}"
    cap = config.hook_budget_cap_ms(event)
    try:
        wanted = float(timeout_ms)
    except (TypeError, ValueError):
        wanted = float(cap)
    if wanted < cap:
        longer = int(min(cap, max(DEFAULT_BUDGET_MS, 2 * wanted)))
        return f"{said}; give it longer: `remem config set prime.timeout_ms {longer}`"
    return (f"{said}; {cap} ms is the most a hook may take (less than its agent waits): "
            "this machine is too busy for the hook")
