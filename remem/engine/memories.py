"""Explicit memories: `remember` from the CLI, MCP and events, and plain reads of one memory."""

from __future__ import annotations

from typing import Any, Sequence

from remem.engine import clock
from remem.engine.embed import get_embedder, to_blob
from remem.engine.redaction import redact_secrets
from remem.engine.lifecycle import _clamp, creation_fields
from remem.engine.store import (
    EPISODE_KINDS, MAX_DETAIL, MAX_GIST, MAX_TAGS, MAX_TITLE, TRUNCATED, Store, cap, chunks, clean_text, cut_from,
    episode_hash, gist_and_detail, new_id, normalise_tag,
)

REMEMBER_KINDS = ("note", "correction", "error", "surprise", "environment")
# Where the words of a long text are read, as the note about them names it: how many
# characters recall shows, and where the rest is. The CLI's; the MCP tools name their own.
READ_IN_FULL = (MAX_GIST, "the whole text is kept in its detail")


def remember(store: Store, text: str, **options: Any) -> dict[str, Any]:
    """Store one memory now and return it (without its vector); the options are
    remember_noting's (kind, title, tags, importance, valence, arousal, ttl, short_term, cwd,
    session_id, source, at, memory_id), which also says what was cut or replaced.

    Secrets in the words (a key pasted into a note) are stored as "[secret]", as ingest and
    explicit events store them: recall and the MCP tools hand memories to agents. Words longer
    than a gist holds are kept whole in the detail (store.gist_and_detail, as for an event).
    `cwd` is a folder's absolute path: edges turn a project argument into one with
    projects.resolve_project."""
    return remember_noting(store, text, **options)[0]


def remember_noting(
    store: Store,
    text: str,
    *,
    kind: str = "note",
    title: str | None = None,
    tags: Sequence[str] = (),
    importance: float = 0.5,
    valence: float = 0.0,
    arousal: float = 0.0,
    ttl: str | float | None = None,
    short_term: bool = False,
    cwd: str | None = None,
    session_id: str | None = None,
    source: str = "remember",
    at: str | None = None,
    memory_id: str | None = None,
    read: tuple[int, str] = READ_IN_FULL,
) -> tuple[dict[str, Any], str | None]:
    """`remember`, and one line saying what was stored otherwise than given (None: nothing
    was): a secret replaced by "[secret]", words past the caps cut. For the edges to tell
    the person (or the agent): nothing is changed or dropped without a word. `read`: how many
    characters of a long text the reader's recall shows, and where the rest is (READ_IN_FULL)."""
    given = clean_text((text or "").strip())
    text = redact_secrets(given)
    if not text:
        raise ValueError("nothing to remember: the text is empty")
    if not visible(text):
        raise ValueError("nothing to remember: the text has no visible character (only control, "
                         "zero-width or blank ones); give it words")
    if cwd is not None and not cwd.startswith("/"):
        # A relative folder matches no project filter: the memory would be found by none.
        raise ValueError(f"the project folder must be a full path, not {cwd!r}; "
                         "give it as /home/you/code/shop or ~/code/shop")
    if kind not in EPISODE_KINDS or kind == "session":
        raise ValueError(f"kind must be one of {', '.join(REMEMBER_KINDS)}, not {kind!r}")
    # "" is "no lifetime", as None is: MCP clients send "" for an optional string left unset,
    # and refusing it would fail their every remember. A person's empty --ttl is refused by the
    # CLI before it gets here.
    ttl_s = clock.parse_ttl(ttl) if ttl not in (None, "") else None
    memory_type = "short_term" if (short_term or ttl_s is not None) else "long_term"
    fields = creation_fields(
        memory_type=memory_type, ttl_s=ttl_s, importance=importance, valence=valence, arousal=arousal
    )
    flash_kept = memory_type != fields["memory_type"]  # the flashbulb rule: kept long-term
    given_title = clean_text(title.strip()) if title and title.strip() else ""
    tags, tag_secrets = stored_tags(tags)
    title = _title(title, text)
    gist, detail = gist_and_detail(text)
    embedder = get_embedder()
    vector = embedder.encode([text if kind == "correction" else f"{title}\n{text}"])[0]
    stamp = clock.iso()
    episode = {
        "id": memory_id or new_id(),
        "kind": kind,
        "title": title,
        "gist": gist,
        "detail": detail,
        "cwd": cwd,
        "session_id": session_id,
        "source": source,
        "at": at or stamp,
        "created": stamp,
        "tags": tags,
        "space": embedder.space,
        "embedding": to_blob(vector),
        **fields,
    }
    store.put_episodes([episode])
    from remem.engine import graph  # lazily: graph pulls in the vector cache

    graph.discover_for(store, episode["id"])  # auto-discovered similar_to connections
    secrets = text != given or redact_secrets(given_title) != given_title
    said = stored_otherwise(len(text), secrets=secrets, tag_secrets=tag_secrets, read=read,
                            title_cut=cut_from(len(redact_secrets(given_title)), MAX_TITLE))
    if flash_kept:
        kept = (f"arousal {fields['arousal']:g} makes a flashbulb memory, kept long-term"
                + (": the ttl was ignored" if ttl_s is not None else ", not short-term"))
        said = f"{said}; {kept}" if said else kept
    return public(store.episode(episode["id"])), said


def visible(text: str) -> bool:
    """Whether the text has a character that shows: not only blanks, control characters
    (ESC) and zero-width ones (U+200B), which would store a memory no one can see."""
    import unicodedata

    return any(not ch.isspace() and unicodedata.category(ch) not in ("Cc", "Cf", "Zs", "Zl", "Zp")
               for ch in text)


def stored_tags(tags: Sequence[str] | str) -> tuple[list[str], bool]:
    """Tags as a memory keeps them: each with its secrets replaced by "[secret]" (recall hands
    tags to agents too), normalised, blank and repeated ones dropped; and whether a secret was
    replaced. More than MAX_TAGS (the event format's limit) are refused: a memory's tags come
    back with it in every answer that finds it."""
    if isinstance(tags, str):
        tags = [tags]
    given = [str(t) for t in tags if str(t).strip()]
    kept = [t for t in dict.fromkeys(normalise_tag(redact_secrets(t)) for t in given) if t]
    if len(kept) > MAX_TAGS:
        raise ValueError(f"at most {MAX_TAGS} tags a memory, not {len(kept):,}; keep the ones you "
                         "would search by")
    return kept, any(redact_secrets(t) != t for t in given)


def check_tags(tags: Sequence[str]) -> None:
    """Refuse tags a memory would not keep as given, where they are written (the MCP tools'
    remember and update_memory): a blank one (an unset variable, an agent's [""]), which
    stored_tags would drop (and, replacing a memory's tags, erase them all), with the line
    recall and search give for it; one longer than a stored tag may be (MAX_TAG), which would
    be cut and kept with the truncation marker, with the events API's line. A secret in a tag
    counts as the "[secret]" stored for it, and its words are not repeated."""
    from remem.engine.lifecycle import check_filters
    from remem.engine.store import MAX_TAG

    check_filters(tags=tags)
    for tag in tags:
        length = len(clean_text(redact_secrets(str(tag)).lower()).strip())
        if length > MAX_TAG:
            raise ValueError(f"tags: at most {MAX_TAGS} tags of at most {MAX_TAG} characters; one has "
                             f"{length:,}: shorten it")


def stored_otherwise(length: int | None, *, secrets: bool = False, tag_secrets: bool = False,
                     title_cut: int = 0, read: tuple[int, str] = READ_IN_FULL,
                     room: int = MAX_DETAIL) -> str | None:
    """One line saying how words of `length` characters (secrets already replaced; None: no
    new text) were stored otherwise than given, or None: where a text longer than recall
    shows went (`read`, READ_IN_FULL), what past the cap was cut (`room`: the detail's, or
    the gist's for a memory whose detail is not its text), a secret replaced in the text or a
    tag, a title cut."""
    said = []
    if secrets:
        said.append("a secret in the text was stored as [secret] (memories are handed to agents)")
    if tag_secrets:
        said.append("a secret in a tag was stored as [secret]")
    shown, rest = read
    lost = cut_from(length or 0, room)
    if lost:
        said.append(f"the text is {length:,} characters, over the {room:,} cap: its last {lost:,} "
                    "were cut (marked …[truncated by remem]); split it into several memories to keep it all")
    elif length and length > shown:
        said.append(f"the text is {length:,} characters: recall shows the first {shown:,}, and {rest}")
    if title_cut:
        said.append(f"the title was cut to {MAX_TITLE:,} characters (its last {title_cut:,} left out)")
    return "; ".join(said) or None


def _title(given: str | None, text: str) -> str:
    """A title given is kept whole up to the store's cap (marked when cut); one made from the
    text is its first line, shortened."""
    if given and given.strip():
        return cap(redact_secrets(clean_text(given.strip())), MAX_TITLE)
    return clean_text((text.splitlines() or [""])[0])[:120]


def public(row: dict[str, Any]) -> dict[str, Any]:
    """A memory row as shown to people and tools: every column but the vector, `archived` as
    true/false (the store keeps 0/1). The one place that says so: the CLI's --json, the MCP
    tools and the HTTP API all print what this returns."""
    shown = {k: v for k, v in row.items() if k not in ("embedding", "seq")}
    if isinstance(shown.get("archived"), int):
        shown["archived"] = bool(shown["archived"])
    return shown


UPDATABLE = ("title", "text", "tags", "importance", "valence", "arousal")


def update_memory(store: Store, memory_id: str, **fields: Any) -> dict[str, Any]:
    """Change a memory's title, text, tags, importance, valence or arousal; returns it.

    A changed title or text is re-embedded (outside the write). Raising arousal here never
    makes a flashbulb: that rule applies at creation only. update_memory_noting also says
    what was stored otherwise than given.
    """
    return update_memory_noting(store, memory_id, **fields)[0]


def update_memory_noting(store: Store, memory_id: str, *, read: tuple[int, str] = READ_IN_FULL,
                         **fields: Any) -> tuple[dict[str, Any], str | None]:
    """`update_memory`, and the line remember_noting gives (stored_otherwise) when a secret
    was replaced or words were cut, or None."""
    unknown = sorted(set(fields) - set(UPDATABLE))
    if unknown:
        raise ValueError(f"cannot update {', '.join(unknown)}; updatable: {', '.join(UPDATABLE)}")
    fields = {k: v for k, v in fields.items() if v is not None}
    if not fields:
        raise ValueError(f"nothing to update: give at least one of {', '.join(UPDATABLE)}")
    row = store.episode(memory_id)
    sets: dict[str, Any] = {}
    for name, lo, hi in (("importance", 0.0, 1.0), ("valence", -1.0, 1.0), ("arousal", 0.0, 1.0)):
        if name in fields:
            sets[name] = _clamp(fields[name], lo, hi, name)
    title, text, detail = row["title"], row["gist"], row["detail"]
    said: dict[str, Any] = {}  # for stored_otherwise
    tags = None
    if "tags" in fields:
        tags, said["tag_secrets"] = stored_tags(fields["tags"])
    if "text" in fields:
        given = clean_text(str(fields["text"]).strip())
        text = redact_secrets(given)  # as `remember` stores it
        if not text:
            raise ValueError("text cannot be empty; delete the memory instead")
        if not visible(text):
            raise ValueError("text has no visible character (only control, zero-width or blank "
                             "ones); give it words, or delete the memory instead")
        said.update(length=len(text), secrets=text != given)
        if _detail_is_the_text(row):
            # The detail held the words whole (remember, gist_and_detail): it follows them, so
            # the old words are not kept (and found) under the new ones.
            gist, detail = gist_and_detail(text)
            sets["gist"], sets["detail"] = cap(gist, MAX_GIST), cap(detail, MAX_DETAIL)
            detail = sets["detail"]
        else:  # a detail of its own (a failed call's output): kept; the words cut to the gist
            sets["gist"] = cap(text, MAX_GIST)
            said["room"] = MAX_GIST
        if "title" not in fields and row["title"] == _title(None, row["gist"]):
            # A title made from the old text follows the text (else the old words stay found).
            title = sets["title"] = _title(None, text)
    if "title" in fields:
        if not str(fields["title"]).strip():
            raise ValueError("title cannot be empty")
        title = sets["title"] = _title(str(fields["title"]), text)
        given_title = clean_text(str(fields["title"]).strip())
        said["secrets"] = said.get("secrets") or redact_secrets(given_title) != given_title
        said["title_cut"] = cut_from(len(redact_secrets(given_title)), MAX_TITLE)
    if "text" in fields or "title" in fields:
        embedder = get_embedder()
        source = text if row["kind"] == "correction" else f"{title}\n{text}"
        sets["embedding"] = to_blob(embedder.encode([source])[0])
        sets["space"] = embedder.space
        sets["content_hash"] = episode_hash(title, sets.get("gist", row["gist"]), detail)  # as stored
    with store.write() as conn:
        if sets:
            conn.execute(
                f"UPDATE episodes SET {', '.join(c + ' = ?' for c in sets)} WHERE id = ?",
                [*sets.values(), row["id"]],
            )
        if tags is not None:
            conn.execute("DELETE FROM tags WHERE memory_id = ?", (row["id"],))
            conn.executemany(
                "INSERT OR IGNORE INTO tags (memory_id, tag) VALUES (?, ?)", [(row["id"], t) for t in tags]
            )
    return public(store.episode(row["id"])), stored_otherwise(said.pop("length", None), read=read, **said)


def _detail_is_the_text(row: dict[str, Any]) -> bool:
    """The memory has no detail, or its detail is its text in full (the gist its cut start)."""
    gist, detail = row["gist"] or "", row["detail"] or ""
    return not detail or (gist.endswith(TRUNCATED) and detail.startswith(gist[: -len(TRUNCATED)]))


def add_tags(store: Store, memory_id: str, tags: Sequence[str]) -> dict[str, Any]:
    """Add tags to a memory, keeping the ones it has (as stored_tags keeps them); returns the
    memory. NotFound when there is no such memory; ValueError (stored_tags' one line) when the
    tags it has and the new ones together pass MAX_TAGS, and then none is added."""
    row = store.episode(memory_id)
    new, _ = stored_tags(tags)
    if new:
        with store.write() as conn:  # read and added in one transaction: a tag added elsewhere meanwhile counts
            have = [t for (t,) in conn.execute("SELECT tag FROM tags WHERE memory_id = ?", (row["id"],))]
            together = list(dict.fromkeys([*have, *new]))
            if len(together) > MAX_TAGS:
                stored_tags(together)  # raises its one line; the transaction is rolled back
            conn.executemany("INSERT OR IGNORE INTO tags (memory_id, tag) VALUES (?, ?)",
                             [(row["id"], t) for t in new])
    return public(store.episode(row["id"]))


def episodes_by_ids(store: Store, ids: Sequence[str]) -> list[dict[str, Any]]:
    """The listed memories in the order given, as a page of the browser shows them (no vector,
    tags attached); an id no memory has (deleted meanwhile) is left out."""
    from remem.engine.browse import _LIST_COLUMNS

    wanted = list(dict.fromkeys(ids))
    found: dict[str, dict[str, Any]] = {}
    for chunk in chunks(wanted, 500):
        marks = ",".join("?" for _ in chunk)
        for row in store.rows(f"SELECT {_LIST_COLUMNS} FROM episodes WHERE id IN ({marks})", chunk):
            found[row["id"]] = {**row, "tags": []}
        for t in store.rows(f"SELECT memory_id, tag FROM tags WHERE memory_id IN ({marks}) ORDER BY tag", chunk):
            if t["memory_id"] in found:
                found[t["memory_id"]]["tags"].append(t["tag"])
    return [found[i] for i in wanted if i in found]


def sender_name(origin: str | None, label: str | None = None, *, brief: bool = False) -> str:
    """Another memory as every edge names it: the label the person gave that peer and its full
    origin id (the one `remem share trust` takes), or the id alone; brief, in a list after a
    lesson's words: the label (at most 16 characters), else the origin's first 8."""
    label = " ".join((label or "").split())
    if brief:
        return (label if len(label) <= 16 else label[:15] + "…") if label else (origin or "?")[:8]
    return f"{label} ({origin})" if label else (origin or "?")


def with_provenance(store: Store, lessons: Sequence[dict[str, Any]], *,
                    identity_dir: Any = None) -> list[dict[str, Any]]:
    """`lessons`, each with where it came from, for the edges to show: `received` (True when
    another memory sent it: it has an origin that is not this memory's own), `origin_label`
    (the label the person gave that peer with `remem share trust --label`, or None) and
    `corroborated_by` (the other memories that sent the same lesson: origin and label each)."""
    from remem.engine.share_sign import own_origin

    if not any(l.get("origin") for l in lessons):  # nothing received: no identity or peers to read
        return [{**l, "received": False, "origin_label": None, "corroborated_by": []} for l in lessons]
    ours = own_origin(identity_dir)
    labels = {r["origin"]: r["label"] for r in store.rows("SELECT origin, label FROM peers WHERE label IS NOT NULL")}
    out = []
    for lesson in lessons:
        origin = lesson.get("origin")
        received = bool(origin) and origin != ours
        others = [o for o in dict.fromkeys(lesson.get("origins") or []) if o not in (origin, ours)] if received else []
        out.append({**lesson, "received": received, "origin_label": labels.get(origin) if received else None,
                    "corroborated_by": [{"origin": o, "label": labels.get(o)} for o in others]})
    return out


def for_agents(store: Store, lessons: Sequence[dict[str, Any]], *,
               identity_dir: Any = None) -> list[dict[str, Any]]:
    """The lessons of `lessons` an agent may read (with their provenance, `with_provenance`):
    every lesson of this memory's own, in any status, and a lesson another memory sent only
    while it is active (accepted by the person, or corroborated). A received lesson waiting for
    a decision (candidate), quarantined (its words failed the safety checks: it may be a prompt
    injection), rejected (vetoed) or revoked by its author is its author's words that nobody
    here vouched for, so it is never handed to an agent; `remem share candidates` and
    `remem lessons list` show them to the person."""
    return [l for l in with_provenance(store, lessons, identity_dir=identity_dir)
            if l["status"] == "active" or not l["received"]]
