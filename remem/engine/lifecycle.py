"""Memory lifecycle: types, TTL, flashbulb, decay, forgetting, archive, and the due tasks.

How the rules fit together (docs/LIFECYCLE.md says it for people):

- Visibility: the strength rule is the only automatic way a live memory is hidden. Strength
  falls as strength × 2^(−days since touch / 45); below 0.15 the memory is archived (soft:
  hidden from recall, kept, restorable). `forget ID` archives by hand.
- Deletion: health. It falls (short-term −8/day, long-term −2/day since the last touch) only
  for memories already on their way out: short-term memories, and archived ones. Reaching 0
  deletes the memory everywhere. A live long-term memory is kept by the strength rule, so its
  health does not fall; archiving stamps `last_touched`, which starts its health clock.
  Short-term memories also go at their TTL; `cleanup_archived` deletes archived memories not
  touched for lifecycle.cleanup_archived_days, whatever the health rates are set to.
- Flashbulb memories (arousal >= 0.8 at creation) are exempt from every decay until
  `flashbulb_until`; their clocks start when protection ends.

Every decay is computed from stored timestamps and the time its task last ran (`tasks`
table, read and written in the same transaction), so a late run catches up exactly and a
second run at the same moment changes nothing.

A task that last ran while the clock was ahead has a last_run after now. A decay's last_run
never moves back (that run charged every memory up to it; nothing is charged twice), so it owes
nothing until the clock passes it; any other task's last_run is only a schedule, so its next
run puts it back to that run's time (_mark_run). task_status says so in each task's `note`.

Archiving can be undone, deleting cannot: a run made more than HOLD_DELETES_DAYS after remem
last ran its tasks (clock_seen) may be one on a clock set wrong, far ahead, so the tasks that
delete for good (expire_short_term, active_forgetting, cleanup_archived) hold their deletions
back (`held_back`, and a `note` saying why) and the next run, the clock then seen again, makes
them. A laptop asleep for months loses one run's delay; a clock jump loses nothing. Nor does
active_forgetting delete while its last run is after now: that run's decay was on a clock ahead.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any, Callable, Iterable, Mapping

from remem import config as config_mod
from remem.engine import clock
from remem.engine.store import EPISODE_KINDS, MAX_TAGS, Store, normalise_tag

MEMORY_TYPES = ("short_term", "long_term")
# The order run_due_tasks runs them in: hide before deleting, delete before connecting.
TASK_ORDER = (
    "expire_short_term", "strength_decay", "importance_decay", "active_forgetting",
    "cleanup_archived", "discover_connections", "consolidate",
)
# The tasks whose last_run is where decay is owed from: it never moves back (_mark_run).
DECAY_TASKS = ("strength_decay", "importance_decay", "active_forgetting")
# The tasks that delete memories for good, and hold that back after a long gap (clock_seen).
DELETING_TASKS = ("expire_short_term", "active_forgetting", "cleanup_archived")
# A run this many days after remem last ran its tasks holds its deletions back for one run:
# more than a clock set wrong by a few months could mean, less than remem left unused for
# half a year, whose first run then deletes what the second would.
HOLD_DELETES_DAYS = 180.0
_LOOK = object()  # `seen` not given: the task looks it up (clock_seen)
Progress = Callable[[str, int, int, str], None]


def _clamp(value: float, lo: float, hi: float, name: str) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number between {lo} and {hi}") from None
    if not math.isfinite(value) or not lo <= value <= hi:
        raise ValueError(f"{name} must be between {lo} and {hi}, not {value}")
    return value


# --------------------------------------------------------------------------- creation

def creation_fields(
    *,
    memory_type: str = "long_term",
    ttl_s: float | None = None,
    importance: float = 0.5,
    valence: float = 0.0,
    arousal: float = 0.0,
    cfg: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Lifecycle fields of a new memory, flashbulb rule included (creation time only)."""
    cfg = cfg or config_mod.load()
    life = cfg["lifecycle"]
    importance = _clamp(importance, 0.0, 1.0, "importance")
    valence = _clamp(valence, -1.0, 1.0, "valence")
    arousal = _clamp(arousal, 0.0, 1.0, "arousal")
    if memory_type not in MEMORY_TYPES:
        raise ValueError("memory_type must be short_term or long_term")
    now = clock.now()
    fields: dict[str, Any] = {
        "memory_type": memory_type,
        "importance": importance,
        "valence": valence,
        "arousal": arousal,
        "expires_at": None,
        "flashbulb_until": None,
    }
    if arousal >= float(life["flashbulb_arousal"]):
        # A flashbulb memory is long-term whatever was asked: the TTL is dropped on purpose.
        fields["memory_type"] = "long_term"
        fields["importance"] = max(importance, float(life["flashbulb_importance"]))
        days = float(life["flashbulb_days"])
        fields["flashbulb_until"] = _later(now, days * 86400, f"lifecycle.flashbulb_days {days:g} is too "
                                           "long; set a smaller one (remem config set lifecycle.flashbulb_days 30)")
    elif memory_type == "short_term":
        seconds = ttl_s if ttl_s is not None else clock.parse_duration(life["short_term_ttl"])
        if seconds <= 0:
            raise ValueError("ttl must be positive, e.g. 30s, 10m, 2h, 7d")
        fields["expires_at"] = _later(now, seconds, f"ttl is too long ({seconds / 86400:,.0f} days); use a "
                                      "shorter one (365d), or leave out the ttl for a long-term memory")
    return fields


def _later(now: datetime, seconds: float, too_long: str) -> str:
    # datetime stops at year 9999: a longer lifetime is refused in one line, not a crash.
    try:
        return clock.iso(now + timedelta(seconds=seconds))
    except OverflowError:
        raise ValueError(too_long) from None


def is_protected(row: Mapping[str, Any], now: datetime | None = None) -> bool:
    """True while a flashbulb memory's protection lasts."""
    until = row.get("flashbulb_until")
    return bool(until) and clock.parse(until) > (now or clock.now())


# --------------------------------------------------------------------------- by hand

def _public(store: Store, memory_id: str) -> dict[str, Any]:
    from remem.engine.memories import public

    return public(store.episode(memory_id))


def promote(store: Store, memory_id: str) -> dict[str, Any]:
    """Short-term -> long-term: the expiry is dropped and health restored (a live long-term
    memory's health no longer falls, so a low number would mislead). Long-term: unchanged."""
    row = store.episode(memory_id)
    if row["memory_type"] != "long_term" or row["expires_at"]:
        with store.write() as conn:
            conn.execute(
                "UPDATE episodes SET memory_type = 'long_term', expires_at = NULL, health = 100.0 "
                "WHERE id = ?", (row["id"],),
            )
    return _public(store, row["id"])


class NothingToUndo(ValueError):
    """A restore of a memory that is not archived: nothing changed. Not a failure (the CLI
    says so and exits 0, as `remem lessons restore` of an active lesson does)."""


def archive(store: Store, memory_id: str) -> dict[str, Any]:
    """Soft delete: hidden from recall, kept. Stamps last_touched (health clock starts). A
    memory archived already is left as it is: a second stamp would restart its health clock."""
    row = store.episode(memory_id)
    with store.write() as conn:
        conn.execute(
            "UPDATE episodes SET archived = 1, last_touched = ? WHERE id = ? AND archived = 0",
            (clock.iso(), row["id"]),
        )
    return _public(store, row["id"])


def restore(store: Store, memory_id: str) -> dict[str, Any]:
    """Undo an archive. A restore by hand is the strongest touch: strength >= 1, health 100.
    NothingToUndo when the memory is not archived (then nothing is changed)."""
    row = store.episode(memory_id)
    with store.write() as conn:
        changed = conn.execute(
            "UPDATE episodes SET archived = 0, strength = max(strength, 1.0), health = 100.0, "
            "last_touched = ? WHERE id = ? AND archived = 1",
            (clock.iso(), row["id"]),
        ).rowcount
    if not changed:
        raise NothingToUndo(f"{row['id']} is not archived; nothing to undo")
    return _public(store, row["id"])


def forget(store: Store, memory_id: str, hard: bool = False) -> dict[str, Any]:
    """Archive (default) or delete everywhere (hard). Returns {id, hard, title}; a soft forget
    of a memory archived already changes nothing (archive) and adds `archived_already`."""
    row = store.episode(memory_id, expired=hard)  # a hard delete also takes an expired one now
    if hard:
        store.hard_delete([row["id"]])
        return {"id": row["id"], "hard": hard, "title": row["title"]}
    archive(store, row["id"])
    out = {"id": row["id"], "hard": hard, "title": row["title"]}
    if row["archived"]:
        out["archived_already"] = True
    return out


# --------------------------------------------------------------------------- task bookkeeping

def _last_run(conn: Any, name: str) -> datetime | None:
    row = conn.execute("SELECT last_run FROM tasks WHERE name = ?", (name,)).fetchone()
    return clock.parse(row[0]) if row and row[0] else None


# The tasks whose last_run is only when they are next due: one after now is put right by
# their next run, wherever it runs (consolidate: sleep's lessons pass, which keeps its own
# place by episode seq, not by time).
SCHEDULE_ONLY_TASKS = ("expire_short_term", "cleanup_archived", "consolidate")


def _mark_run(conn: Any, name: str, stamp: str, cfg: dict[str, Any], *,
              puts_right: bool | None = None) -> None:
    """Record that the task ran at `stamp`. A decay's last_run never moves backwards (a clock
    set back, REMEM_NOW earlier than a run made with it later): the decays are owed only for
    the time after last_run, so moving it back would charge that time a second time.

    A last_run after now (the clock was ahead when it ran) is replaced by this run's when
    `puts_right` (default: the task is in SCHEDULE_ONLY_TASKS), so the task is back on its
    interval. discover_connections is put right only by run_due_tasks, whose run then looked
    at every memory: sleep's connect pass, which also stamps it, looks from a mark of its own,
    ahead too. A last_run not after now is never moved back (a slower run started earlier,
    finishing after a later one, leaves the later stamp)."""
    if name in DECAY_TASKS:
        puts_right = False
    elif puts_right is None:
        puts_right = name in SCHEDULE_ONLY_TASKS
    interval = cfg["tasks"].get(name)
    conn.execute(
        "INSERT INTO tasks (name, last_run, interval_s) VALUES (?1, ?2, ?3) "
        "ON CONFLICT(name) DO UPDATE SET interval_s = excluded.interval_s, last_run = CASE "
        "WHEN tasks.last_run IS NULL OR tasks.last_run < excluded.last_run "
        "OR (?4 AND tasks.last_run > ?5) THEN excluded.last_run ELSE tasks.last_run END",
        (name, stamp, float(interval) if interval is not None else None, 1 if puts_right else 0,
         clock.iso()),
    )


def _short(stamp: str | datetime) -> str:
    """A stored time for people: 2031-01-02 09:00 (UTC)."""
    return clock.iso(clock.parse(stamp) if isinstance(stamp, str) else stamp)[:16].replace("T", " ")


def _ahead(last: datetime) -> str:
    """What a decay run says when its task last ran after now: why it charged nothing."""
    return f"last ran {_short(last)}, after now (the clock was ahead then): nothing owed until the clock passes it"


def ahead_note(name: str, last_run: str) -> str:
    """One line for a task whose last run is after now: what happened, what the task does
    about it and, where there is one, what to run. `remem tasks` prints it, --json carries it."""
    said = f"{name} last ran {_short(last_run)}, which is after now: the clock was ahead then"
    if name in DECAY_TASKS:
        what = {"strength_decay": "no memory's strength decays",
                "importance_decay": "no memory's importance falls",
                "active_forgetting": "no memory's health falls, nor is one deleted,"}[name]
        more = ("; `remem list --archived` shows what it archived, `remem forget ID --undo` brings "
                "one back" if name == "strength_decay" else "")
        return (f"{said}. That run charged decay up to then, so {what} until the clock passes it "
                f"(no time is charged twice){more}")
    if name == "consolidate":
        return f"{said}; the next `remem sleep` runs it and records the right time"
    scope = " over every memory (which came since its last run is not known)" \
        if name == "discover_connections" else ""
    return f"{said}; it is due: `remem tasks --run` runs it now{scope} and records the right time"


def _anchor(now: datetime, *stamps: str | datetime | None) -> datetime | None:
    """The latest of the stamps: decay is owed only for the time after it (None: nothing owed)."""
    latest: datetime | None = None
    for stamp in stamps:
        if stamp is None:
            continue
        dt = clock.parse(stamp) if isinstance(stamp, str) else stamp
        if latest is None or dt > latest:
            latest = dt
    return latest if latest is not None and latest < now else None


def _days(now: datetime, since: datetime) -> float:
    return (now - since).total_seconds() / 86400.0


def clock_seen(store: Store) -> datetime | None:
    """When this memory last saw the clock: its tasks' latest run (sleep and `remem serve` run
    them daily or more), or, before any task ever ran, its newest memory's `created`. None
    for an empty memory."""
    last = store.scalar("SELECT max(last_run) FROM tasks") or store.scalar("SELECT max(created) FROM episodes")
    return clock.parse(last) if last else None


def _held_back(now: datetime, seen: Any, store: Store) -> str | None:
    """Why a task's deletions wait for its next run (None: they do not): now is more than
    HOLD_DELETES_DAYS after the clock was last seen (`seen`; _LOOK: looked up here). A clock
    set years ahead would otherwise delete for good what the right time keeps."""
    if seen is _LOOK:
        seen = clock_seen(store)
    if seen is None or _days(now, seen) <= HOLD_DELETES_DAYS:
        return None
    return (f"held back: now ({_short(now)}) is {_days(now, seen):,.0f} days after remem last ran its tasks "
            f"({_short(seen)}); if the clock is wrong, put it right; if it is right, the next run deletes them")


# --------------------------------------------------------------------------- the rules

# A short-term memory past its TTL, given the time now: deleted by the expire task, and gone for
# every read before it runs (recall, search, `remem list`).
EXPIRED = "(memory_type = 'short_term' AND coalesce(expires_at <= ?, 0))"


def expire_short_term(store: Store, cfg: dict[str, Any] | None = None, *, seen: Any = _LOOK) -> dict[str, Any]:
    """Delete short-term memories past their TTL (everywhere: they were never kept); after a
    long gap (_held_back) the next run does."""
    now = clock.now()
    ids = [r["id"] for r in store.rows(f"SELECT id FROM episodes WHERE {EXPIRED}", (clock.iso(now),))]
    held = _held_back(now, seen, store) if ids else None
    if held:
        return {"expired": 0, "held_back": len(ids), "note": held}
    return {"expired": store.hard_delete(ids)}


# The decays below read and compute outside any transaction, then claim the run (a short
# write that moves the task's last_run, only if no one else moved it meanwhile), then apply
# in short chunks as factors of the current values, so the write lock is never held across
# a scan of every episode (hooks and the server write meanwhile) and a concurrent touch is
# kept. Claim first: a run killed half-way leaves the rest undecayed for that interval
# (memories kept a little stronger), never decayed twice.
APPLY_CHUNK = 2000


def _claim(store: Store, name: str, seen: datetime | None, stamp: str, cfg: dict[str, Any]) -> bool:
    with store.write() as conn:
        if _last_run(conn, name) != seen:
            return False  # another process ran this task since we read
        _mark_run(conn, name, stamp, cfg)
    return True


def _apply(store: Store, sql: str, params: list[tuple[Any, ...]]) -> None:
    for start in range(0, len(params), APPLY_CHUNK):
        with store.write() as conn:
            conn.executemany(sql, params[start:start + APPLY_CHUNK])


def strength_decay(store: Store, cfg: dict[str, Any] | None = None) -> dict[str, Any]:
    """strength × 2^(−days since touch / half-life); below the cut the memory is archived."""
    cfg = cfg or config_mod.load()
    life = cfg["lifecycle"]
    half = float(life["strength_half_life_days"])
    cut = float(life["archive_below"])
    now = clock.now()
    stamp = clock.iso(now)
    last = _last_run(store.conn, "strength_decay")
    if last is not None and last > now:  # every memory's anchor is after now: nothing is owed
        return {"decayed": 0, "archived": 0, "skipped": _ahead(last)}
    rows = store.rows(
        "SELECT id, strength, last_touched, created, at, flashbulb_until FROM episodes WHERE archived = 0"
    )
    updates: list[tuple[float, str]] = []
    hide: list[tuple[float, float, str, str]] = []
    for r in rows:
        # Never touched: from when remem stored it, not from when it happened (a history
        # imported today is not archived on the first sleep for being a year old).
        since = _anchor(now, r["last_touched"] or r["at"], r["created"], last, r["flashbulb_until"])
        if since is None or half <= 0:
            continue
        factor = 2 ** (-_days(now, since) / half)
        if float(r["strength"]) * factor < cut:
            hide.append((factor, cut, stamp, r["id"]))
        else:
            updates.append((factor, r["id"]))
    if not _claim(store, "strength_decay", last, stamp, cfg):
        return {"decayed": 0, "archived": 0, "skipped": "ran elsewhere meanwhile"}
    _apply(store, "UPDATE episodes SET strength = strength * ? WHERE id = ?", updates)
    # Archived only if still below the cut after the factor (a touch meanwhile saves it).
    _apply(store, "UPDATE episodes SET strength = strength * ?1, "
                  "archived = CASE WHEN strength * ?1 < ?2 THEN 1 ELSE archived END, "
                  "last_touched = CASE WHEN strength * ?1 < ?2 THEN ?3 ELSE last_touched END "
                  "WHERE id = ?4", hide)
    return {"decayed": len(updates) + len(hide), "archived": len(hide)}


def importance_decay(store: Store, cfg: dict[str, Any] | None = None) -> dict[str, Any]:
    """Live long-term importance × (1 − rate)^days (about 0.5 %/day); flashbulb exempt while protected."""
    cfg = cfg or config_mod.load()
    rate = float(cfg["lifecycle"]["importance_decay_per_day"])
    now = clock.now()
    stamp = clock.iso(now)
    last = _last_run(store.conn, "importance_decay")
    if last is not None and last > now:
        return {"decayed": 0, "skipped": _ahead(last)}
    rows = store.rows(
        "SELECT id, importance, created, flashbulb_until FROM episodes "
        "WHERE archived = 0 AND memory_type = 'long_term'"
    )
    updates = []
    for r in rows:
        since = _anchor(now, r["created"], last, r["flashbulb_until"])
        if since is None or rate <= 0:
            continue
        updates.append(((1 - rate) ** _days(now, since), r["id"]))
    if not _claim(store, "importance_decay", last, stamp, cfg):
        return {"decayed": 0, "skipped": "ran elsewhere meanwhile"}
    _apply(store, "UPDATE episodes SET importance = importance * ? WHERE id = ?", updates)
    return {"decayed": len(updates)}


def active_forgetting(store: Store, cfg: dict[str, Any] | None = None, *, seen: Any = _LOOK) -> dict[str, Any]:
    """Health of short-term and archived memories falls per day since touch; at 0 they are
    deleted (after a long gap, _held_back, by the next run; while the last run is after now,
    once the clock passes it)."""
    cfg = cfg or config_mod.load()
    life = cfg["lifecycle"]
    rates = {
        "short_term": float(life["health_decay_short_term"]),
        "long_term": float(life["health_decay_long_term"]),
    }
    now = clock.now()
    stamp = clock.iso(now)
    doomed: list[str] = []
    last = _last_run(store.conn, "active_forgetting")
    if last is not None and last > now:
        # Nothing is owed, and nothing is deleted: what is at health 0 got there on a clock that
        # was ahead (the run that charged it), so it waits until the clock passes that run.
        return {"decayed": 0, "deleted": 0, "skipped": _ahead(last)}
    rows = store.rows(
        "SELECT id, memory_type, health, last_touched, at, created, flashbulb_until FROM episodes "
        "WHERE memory_type = 'short_term' OR archived = 1"
    )
    updates = []
    for r in rows:
        health = float(r["health"])
        # From when remem stored it, as strength does: an event dated last month is not owed a month.
        since = _anchor(now, r["last_touched"] or r["at"], r["created"], last, r["flashbulb_until"])
        rate = rates.get(r["memory_type"], rates["long_term"])
        if since is not None and rate > 0:
            loss = rate * _days(now, since)
            health = max(0.0, health - loss)
            updates.append((loss, r["id"]))
        # Checked even when nothing was owed, so a run cut short before deleting still finishes.
        if health <= 0 and not is_protected(r, now):
            doomed.append(r["id"])
    held = _held_back(now, seen, store) if doomed else None
    if not _claim(store, "active_forgetting", last, stamp, cfg):
        return {"decayed": 0, "deleted": 0, "skipped": "ran elsewhere meanwhile"}
    _apply(store, "UPDATE episodes SET health = max(0.0, health - ?) WHERE id = ?", updates)
    if held:  # at health 0 now, archived: the next run deletes them, if the clock stays
        return {"decayed": len(updates), "deleted": 0, "held_back": len(doomed), "note": held}
    deleted = store.hard_delete(doomed)
    return {"decayed": len(updates), "deleted": deleted}


def cleanup_archived(store: Store, cfg: dict[str, Any] | None = None, *, seen: Any = _LOOK) -> dict[str, Any]:
    """Delete archived memories not touched for lifecycle.cleanup_archived_days (default 180);
    after a long gap (_held_back) its next run does."""
    cfg = cfg or config_mod.load()
    days = float(cfg["lifecycle"]["cleanup_archived_days"])
    if days <= 0:
        return {"deleted": 0}
    now = clock.now()
    cutoff = clock.iso(now - timedelta(days=days))
    rows = store.rows(
        "SELECT id, flashbulb_until FROM episodes WHERE archived = 1 "
        "AND coalesce(last_touched, at) < ?", (cutoff,))
    ids = [r["id"] for r in rows if not is_protected(r, now)]
    held = _held_back(now, seen, store) if ids else None
    if held:
        return {"deleted": 0, "held_back": len(ids), "note": held}
    return {"deleted": store.hard_delete(ids)}


def _discover_connections(store: Store, cfg: dict[str, Any], since: datetime | None,
                          progress: Progress | None) -> dict[str, Any]:
    from remem.engine import graph

    def step(done: int, total: int, message: str) -> None:
        if progress:
            progress("discover_connections", done, total, message)

    return graph.discover_all(store, progress=step, since=clock.iso(since) if since else None, cfg=cfg)


# --------------------------------------------------------------------------- the due tasks

def task_status(store: Store, cfg: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Each task: interval, last run, whether it is due and when it next is.

    `last_run_ahead`: its last run is after now (the clock was ahead when it ran); then it is
    due now, not "not due until" a time that may be years off, and `note` (else None) says in
    one line what that means for it (ahead_note)."""
    cfg = cfg or config_mod.load()
    now = clock.now()
    last_runs = {r["name"]: r["last_run"] for r in store.rows("SELECT name, last_run FROM tasks")}
    out = []
    for name in TASK_ORDER:
        interval = float(cfg["tasks"].get(name, 0) or 0)
        last = last_runs.get(name)
        ahead = last is not None and clock.parse(last) > now
        note = None
        if interval <= 0:
            due, next_run = False, None
        elif last is None:
            due, next_run = True, clock.iso(now)
        elif ahead:
            # A decay then owes nothing for the time it charged already; another task's next
            # run puts its last_run back on time (_mark_run).
            due, next_run, note = True, clock.iso(now), ahead_note(name, last)
        else:
            try:
                nxt = clock.parse(last) + timedelta(seconds=interval)
            except OverflowError:  # past year 9999 (a clock set near its end): never due
                nxt = datetime.max.replace(tzinfo=now.tzinfo)
            due, next_run = nxt <= now, clock.iso(nxt)
        out.append({"name": name, "interval_s": interval, "last_run": last, "due": due,
                    "next_run": next_run, "enabled": interval > 0, "last_run_ahead": ahead,
                    "note": note})
    return out


def run_due_tasks(
    store: Store,
    cfg: dict[str, Any] | None = None,
    force: bool = False,
    progress: Progress | None = None,
    registry: Mapping[str, Callable[[Store], Any]] | None = None,
) -> dict[str, Any]:
    """Run every task that is due (all enabled ones with force), in TASK_ORDER.

    `registry` supplies or overrides tasks by name, e.g. {"consolidate": fn(store)} from sleep;
    without one, consolidate is skipped (it belongs to `remem sleep`). progress(name, done,
    total, message) is called as tasks start and finish. Returns {name: {ran, result|reason}}.
    """
    cfg = cfg or config_mod.load()
    registry = dict(registry or {})
    status = {s["name"]: s for s in task_status(store, cfg)}
    seen = clock_seen(store)  # before any task of this run stamps its own: _held_back
    names = list(TASK_ORDER) + [n for n in registry if n not in TASK_ORDER]
    builtin: dict[str, Callable[[Store, dict[str, Any]], Any]] = {
        "expire_short_term": expire_short_term,
        "strength_decay": strength_decay,
        "importance_decay": importance_decay,
        "active_forgetting": active_forgetting,
        "cleanup_archived": cleanup_archived,
    }
    report: dict[str, Any] = {}
    total = len(names)
    for done, name in enumerate(names):
        st = status.get(name) or {"due": True, "enabled": True, "last_run": None}
        if not st["enabled"]:
            report[name] = {"ran": False, "reason": "disabled (interval 0 in [tasks])"}
            continue
        if not (force or st["due"]):
            report[name] = {"ran": False, "reason": f"not due until {st['next_run']}"}
            continue
        if name not in registry and name not in builtin and name != "discover_connections":
            report[name] = {"ran": False, "reason": "runs in `remem sleep` (no consolidate supplied)",
                            "left_to": "remem sleep"}
            continue
        if progress:
            progress(name, done, total, f"running {name}")
        started = clock.now()
        try:
            if name in registry:
                result = registry[name](store)
            elif name in DELETING_TASKS:
                result = builtin[name](store, cfg, seen=seen)  # type: ignore[call-arg]
            elif name in builtin:
                result = builtin[name](store, cfg)
            else:
                last = st.get("last_run")
                since = clock.parse(last) if last else None
                if since is not None and since > started:
                    since = None  # the clock was ahead: which memories came since is not known
                result = _discover_connections(store, cfg, since, progress)
        except Exception as exc:  # one failing task (a locked store, a bad plug-in) spares the rest
            from remem.log import log_exception

            where = log_exception(f"tasks.{name}", exc)
            report[name] = {"ran": False, "error": f"{exc!r} (details in {where})"}
            continue
        if name not in DECAY_TASKS:
            # The decay rules record their own runs when they claim them (exactly once).
            with store.write() as conn:
                _mark_run(conn, name, clock.iso(started), cfg, puts_right=True)
        report[name] = {"ran": True, "result": result}
        if progress:
            progress(name, done + 1, total, f"{name} done")
    return report


# --------------------------------------------------------------------------- tags and time

LIST_FIELDS = ("created", "last_touched", "at")


def time_window(since: str | datetime | None, until: str | datetime | None) -> tuple[str | None, str | None]:
    """since/until as ISO stamps (None for a bound not given), checked once for recall, search
    and list at every edge: an empty one is refused (an unset variable would otherwise drop
    the filter without a word), and so is a window that ends before it starts (it would match
    nothing, which reads as "no such memories")."""
    for name, value in (("since", since), ("until", until)):
        if isinstance(value, str) and not value.strip():
            raise ValueError(f"{name} is empty (an unset variable?); give a date (2026-05-01) or a "
                             "duration (7d), or leave it out")
    lo, hi = clock.when(since, "since"), clock.when(until, "until")
    if lo and hi and lo > hi:
        raise ValueError(f"since ({lo[:19]}) is after until ({hi[:19]}); nothing can match: swap them")
    return lo, hi


def check_filters(*, tags: Iterable[Any] | None = None, kinds: Iterable[Any] | None = None,
                  project: str | None = None, memory_type: str | None = None) -> None:
    """Refuse an empty or blank tag, kind or project, as time_window refuses an empty since:
    dropped, it would lift the filter without a word (an unset variable in a script, or an
    agent's [""]) and answer from every memory; and a memory type that is not one. One rule
    for recall, search and list at every edge; None (or no tags, no kinds) is a filter not
    given."""
    if memory_type is not None and memory_type not in MEMORY_TYPES:
        raise ValueError(f"type must be short_term or long_term, not {memory_type!r}")
    if any(not normalise_tag(t) for t in (tags or ())):
        raise ValueError("tag is empty (an unset variable?); give a tag (deploy), or leave it out")
    if any(not str(k).strip() for k in (kinds or ())):
        raise ValueError(f"kind is empty (an unset variable?); give one of {', '.join(EPISODE_KINDS)}, "
                         "or leave it out")
    if project is not None and not str(project).strip():
        raise ValueError("project is empty (an unset variable?); give its folder path or a project's "
                         "name (shop), or leave it out")


# Above this many tagged memories, walking the time index and probing the tag index finds a
# page sooner than collecting every tagged id first and sorting them.
_TAG_PROBE_FROM = 2000


def _tag_clause(store: Store, wanted: list[str], all_tags: bool) -> tuple[str, list[Any]]:
    """SQL for any/all of the tags. Any: shaped by how many memories carry them (rare: collect
    ids through the tag index; common: probe the tags primary key row by row in time order)."""
    marks = ",".join("?" for _ in wanted)
    if all_tags and len(wanted) > MAX_TAGS:
        # No memory holds more than MAX_TAGS tags, so none holds them all.
        return "0", []
    if all_tags and len(wanted) > 1:
        # Bounded by the tag index ranges, however sparse the intersection is; one GROUP BY, not
        # an INTERSECT per tag (SQLite refuses a compound SELECT of more than 500 terms).
        return (f"id IN (SELECT memory_id FROM tags WHERE tag IN ({marks}) GROUP BY memory_id "
                f"HAVING count(DISTINCT tag) = ?)", [*wanted, len(wanted)])
    counts = [int(store.scalar("SELECT count(*) FROM tags WHERE tag = ?", (t,)) or 0) for t in wanted]
    if sum(counts) <= _TAG_PROBE_FROM:
        return f"id IN (SELECT memory_id FROM tags WHERE tag IN ({marks}))", list(wanted)
    return f"EXISTS (SELECT 1 FROM tags WHERE memory_id = episodes.id AND tag IN ({marks}))", list(wanted)


def list_memories(
    store: Store,
    *,
    tags: Iterable[str] | None = None,
    all_tags: bool = False,
    since: str | datetime | None = None,
    until: str | datetime | None = None,
    field: str = "created",
    memory_type: str | None = None,
    archived: bool | None = False,
    kind: str | None = None,
    kinds: Iterable[str] | None = None,
    project: str | None = None,
    limit: int = 100,
    offset: int = 0,
) -> list[dict[str, Any]]:
    """A page of memories, newest first by `field`, each as memories.public shows one (every
    column but the vector, `archived` true/false), plus tags.

    tags: any of them (all of them with all_tags). since/until bound `field` (created,
    last_touched or at). archived: False live only, True archived only, None both. kind, or
    kinds: any of them. project: memories of that folder and the folders below it. A
    short-term memory past its TTL is never listed (EXPIRED), as recall never finds one.
    """
    if field not in LIST_FIELDS:
        raise ValueError(f"field must be one of {', '.join(LIST_FIELDS)}, not {field!r}")
    tags = list(tags or ())  # read twice: no generator left empty
    given_kinds = [*(kinds or ()), *(() if kind is None else (kind,))]
    check_filters(tags=tags, kinds=given_kinds, project=project, memory_type=memory_type)
    wanted_kinds = sorted(set(given_kinds))
    for k in wanted_kinds:
        if k not in EPISODE_KINDS:
            # An unknown kind would list nothing, which reads as "no such memories".
            raise ValueError(f"unknown kind {k!r}; use {', '.join(EPISODE_KINDS)}")
    limit = max(0, min(int(limit), 10_000))
    offset = max(0, int(offset))
    where: list[str] = []
    params: list[Any] = []
    wanted = sorted({normalise_tag(t) for t in tags})
    if wanted:
        clause, args = _tag_clause(store, wanted, all_tags)
        where.append(clause)
        params += args
    lo, hi = time_window(since, until)
    if lo:
        where.append(f"{field} >= ?")
        params.append(lo)
    if hi:
        where.append(f"{field} <= ?")
        params.append(hi)
    if memory_type:
        where.append("memory_type = ?")
        params.append(memory_type)
    where.append(f"NOT {EXPIRED}")  # as recall leaves it out
    params.append(clock.iso())
    if archived is not None:
        where.append("archived = ?")
        params.append(1 if archived else 0)
    if wanted_kinds:
        where.append(f"kind IN ({','.join('?' * len(wanted_kinds))})")
        params += wanted_kinds
    if project:
        from remem.engine.projects import under_sql

        clause, args = under_sql("cwd", project)
        where.append(clause)
        params += args
    from remem.engine.store import EPISODE_COLUMNS

    cols = ", ".join(c for c in EPISODE_COLUMNS if c != "embedding")
    sql = (f"SELECT {cols} FROM episodes {'WHERE ' + ' AND '.join(where) if where else ''} "
           f"ORDER BY {field} DESC, seq DESC LIMIT ? OFFSET ?")
    rows = store.rows(sql, [*params, limit, offset])
    if rows:
        marks = ",".join("?" for _ in rows)
        tag_map: dict[str, list[str]] = {}
        for t in store.rows(f"SELECT memory_id, tag FROM tags WHERE memory_id IN ({marks}) "
                            f"ORDER BY tag", [r["id"] for r in rows]):
            tag_map.setdefault(t["memory_id"], []).append(t["tag"])
        for r in rows:
            r["tags"] = tag_map.get(r["id"], [])
    from remem.engine.memories import public  # lazily: memories imports this module

    return [public(r) for r in rows]
