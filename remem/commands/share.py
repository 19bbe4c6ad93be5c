"""share export|receive|sync|keys|trust|block|peers|candidates|accept|reject|revoke."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Iterator, Optional

import typer

from remem.commands._out import emit_json, open_store, safe, short, table
from remem.errors import NotFound, RememError

FOLDER_HELP = "The sync folder (default: config share.folder)."


def _problems(title: str, items: list[dict[str, Any]]) -> None:
    # Export and confirmations may report the same thing (a copy of our identity elsewhere): once.
    rows = list(dict.fromkeys((p["path"], p["reason"]) for p in items))
    if rows:
        table(title, ["file", "reason"], rows)


def _reasons(item: dict[str, Any]) -> str:
    return safe("; ".join(item["reasons"]))


def _print_receive(rec: dict[str, Any]) -> None:
    # Ids, origins and reasons come from other machines' files: shown escaped (see _out.safe).
    for item in rec["quarantined"]:
        print(f"quarantined {safe(item['id'])} from {safe(item['origin'])}: {_reasons(item)}")
    _problems("rejected", rec["rejected"])
    if rec["incomplete"]:
        print(f"{len(rec['incomplete'])} file(s) incomplete (half-synced?); read again next time")
    for item in rec["activated"]:
        print(f"activated {safe(item['id'])}: {safe(item['why'])}")
    for item in rec["revoked"]:
        print(f"revoked {safe(item['id'])} (by {safe(item['by'])})")
    for item in rec.get("bound", []):
        print(f"{safe(item['id'])} is for project '{safe(item['project'])}': applies in {safe(item['cwd'])}")
    for item in rec.get("waiting_for_project", []):
        print(f"{safe(item['id'])} waits: {safe(item['why'])}")
    waiting = len(rec["received"])
    if waiting:
        print(f"{waiting} new candidate(s): `remem share candidates` to review")


def register(app: typer.Typer) -> None:
    share_app = typer.Typer(
        help="Share lessons with your other machines or a team through a sync folder, signed.\n\n"
        "Example: remem config set share.folder ~/Sync/remem && remem share sync",
        no_args_is_help=True,
    )
    app.add_typer(share_app, name="share")

    @share_app.callback()
    def _share_needs_a_memory() -> None:
        import sys

        from remem.commands._out import require_memory

        if "--help" not in sys.argv:  # a subcommand's --help is read after this runs
            require_memory()

    @share_app.command("keys")
    def keys(json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """This memory's origin id and public key (made on first use).

        Example: remem share keys
        """
        from remem.engine import share

        info = share.keys()
        if json_out:
            emit_json(info)
            return
        print(f"origin:     {info['origin']}")
        print(f"public key: {info['key_pub_line']}")
        print(f"identity:   {info['identity_dir']} (private key file mode 0600)")

    @share_app.command("export")
    def export(folder: Optional[str] = typer.Option(None, "--folder", help=FOLDER_HELP),
               json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """Write your shareable lessons (signed) into the folder.

        Example: remem share export --folder ~/Sync/remem
        """
        from remem.engine import share

        root = share.resolve_folder(folder, create=True)
        with open_store() as store:
            rep = share.export_lessons(store, root)
        if json_out:
            emit_json(rep)
            return
        for item in rep["withheld"]:
            print(f"withheld {safe(item['id'])}: {_reasons(item)}")
        _problems("in your own folder", rep["problems"])
        print(f"exported {len(rep['exported'])}, unchanged {rep['unchanged']}, removed "
              f"{len(rep['removed'])}, withheld {len(rep['withheld'])} -> {safe(rep['folder'])}/{safe(rep['origin'])}")

    @share_app.command("receive")
    def receive(folder: Optional[str] = typer.Option(None, "--folder", help=FOLDER_HELP),
                json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """Read other memories' lessons: verify, check, keep as candidates.

        Example: remem share receive --json
        """
        from remem.engine import share

        root = share.resolve_folder(folder)
        with open_store() as store:
            rep = share.receive(store, root)
        if json_out:
            emit_json(rep)
            return
        _print_receive(rep)
        print(f"received {len(rep['received'])}, quarantined {len(rep['quarantined'])}, rejected "
              f"{len(rep['rejected'])}, activated {len(rep['activated'])}, revoked {len(rep['revoked'])} "
              f"from {len(rep['origins_seen'])} origin(s)"
              + (f", {len(rep['blocked'])} blocked origin(s) skipped" if rep.get("blocked") else "")
              + (f", {len(rep['held_back'])} held back (still being written)" if rep.get("held_back") else ""))

    @share_app.command("sync")
    def sync(folder: Optional[str] = typer.Option(None, "--folder", help=FOLDER_HELP),
             json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """Export, receive, confirm and apply revocations; safe to run any time (cron).

        Example: remem share sync --folder ~/Dropbox/remem
        """
        from remem.engine import share

        with open_store() as store:  # a missing folder whose parent is there is made (share.sync)
            out = share.sync(store, folder)
        if json_out:
            emit_json(out)
            return
        _print_receive(out["receive"])
        _problems("in your own folder", out["export"]["problems"] + out["confirmations"]["problems"])
        print(f"{safe(out['folder'])} as {safe(out['origin'])}: {share.summary_line(out['summary'])}")
        changes = share.summary_changes(out["summary"])
        if changes:
            print("  " + ", ".join(changes))

    @share_app.command("trust")
    def trust(origin: str = typer.Argument(..., help="An origin id, all 16 hex digits (`remem share peers` "
                                           "lists them)."),
              off: bool = typer.Option(False, "--off", help="Stop trusting it."),
              forget: bool = typer.Option(
                  False, "--forget", help="Stop trusting it and drop its pinned key (pinned again, "
                  "untrusted, at the next sync). A peer's new key is a new origin id: trust that one."),
              label: Optional[str] = typer.Option(
                  None, "--label", help="Name it (\"laptop\", \"Ana\"), shown where peers are listed; "
                  "on an origin already trusted only the name changes; \"\" clears it."),
              force: bool = typer.Option(
                  False, "--force", help="Trust an origin id not seen yet (ahead of its first sync); "
                  "without it an unknown id is refused, so a typo cannot trust a peer that does not exist."),
              json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """Trust an origin seen in the share folder (`remem share peers` lists them; check the
        id with `remem share keys` on that machine): its lessons can then be activated by
        corroboration. It takes the full 16-digit id: a prefix is refused, naming what it matches.

        Example: remem share trust 3f9a0c1d2e4b5a69 --label laptop
        """
        from remem.engine import share
        from remem.engine.share_choices import full_origin

        if forget and force:
            raise ValueError("--force is for trusting an origin not seen yet, not with --forget")
        with open_store() as store:
            origin = full_origin(store, origin)
            rep = (share.forget_peer(store, origin, label=label) if forget
                   else share.trust(store, origin, not off, label=label, force=force))
        if json_out:
            emit_json(rep)
            return
        name = safe(f"{rep['origin']} ({rep['label']})" if rep.get("label") else rep["origin"])
        if forget:
            print(f"forgot {name}; its next key.pub is pinned afresh (untrusted)")
        else:
            print(f"{name} {'trusted' if rep['trusted'] else 'no longer trusted'}")
        for item in rep.get("activated", []):
            print(f"activated {safe(item['id'])}: {safe(item['why'])}")
        for item in rep["demoted"]:
            print(f"{safe(item['id'])} {safe(item['why'])}")
        for_project = rep.get("waiting_for_project") or 0
        if (rep.get("waiting") or 0) > for_project:
            print(f"{rep['waiting'] - for_project} of its lessons still wait: trust activates one when a "
                  "second origin you trust sent it too, or it means the same as a lesson of yours; take "
                  "one by hand with `remem share accept ID` (`remem share candidates` lists them)")
        if for_project:
            print(f"{for_project} of its lessons wait for their project's folder here, which no trust "
                  "supplies: `remem share accept ID --project DIR` takes one for a folder of yours "
                  "(`remem share candidates` lists them and why each waits)")

    @share_app.command("block")
    def block(origin: str = typer.Argument(..., help="An origin id, all 16 hex digits (`remem share peers` "
                                           "lists them)."),
              undo: bool = typer.Option(False, "--undo", help="Read it again: what it sends arrives "
                                        "at the next sync (lessons already rejected stay rejected)."),
              json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """Stop reading an origin: its folder in the share folder is skipped unread at every
        sync, and its lessons still waiting are rejected. Kept in config share.blocked_origins.
        A full id not seen yet is blocked ahead of its first sync.

        Example: remem share block 9fdc95440e981985
        """
        from remem import config
        from remem.engine import share

        cfg = config.load()
        read = list(cfg["share"]["blocked_origins"])

        def save(listed: list[str]) -> None:
            # What this block changed in the list it read, applied to the list config.toml holds
            # under its lock (config.update_value): a block or `remem config set` made meanwhile
            # is kept, not written over with the list read before it.
            added = [o for o in listed if o not in read]
            removed = {o for o in read if o not in listed}
            config.update_value("share.blocked_origins",
                                lambda now: [o for o in now if o not in removed] + [o for o in added if o not in now])

        with open_store() as store:
            rep = share.block(store, origin, undo=undo, save=save, cfg=cfg)
        if json_out:
            emit_json(rep)
            return
        if not rep["blocked"]:
            print(f"{safe(rep['origin'])} no longer blocked; what it sends arrives at the next sync")
        elif not rep["seen"]:
            print(f"{safe(rep['origin'])} {'blocked' if rep['changed'] else 'already blocked'} ahead of "
                  "time: no origin of that id has written here yet; its folder is never read")
        else:
            print(f"{safe(rep['origin'])} {'blocked' if rep['changed'] else 'already blocked'}: its folder "
                  f"is no longer read; rejected {len(rep['rejected'])} waiting lesson(s)")

    @share_app.command("peers")
    def peers(json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """Every origin seen in the folder, whether you trust it, and its lessons here.

        Example: remem share peers
        """
        from remem.engine import share

        with open_store() as store:
            rows = share.peers(store)
        if json_out:
            emit_json(rows)
            return
        if not rows:
            # Said, as `share candidates` says "no candidates": an empty table reads as a fault.
            print("no peers yet: another memory appears here once `remem share sync` (or `receive`) "
                  "reads its lessons from the share folder, or once `remem share trust ORIGIN --force` "
                  "names it")
            return
        table("peers", ["origin", "label", "trusted", "first seen", "lessons", "vouched for"],
              [(p["origin"], p.get("label") or "-", "yes" if p["trusted"] else "no", p["first_seen"][:19],
                ", ".join(f"{k} {v}" for k, v in p["lessons"].items()) or "-", p["vouched_for"]) for p in rows],
              no_wrap=("trusted", "first seen"))

    @share_app.command("candidates")
    def candidates(json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """Received lessons waiting for you: origin, checks, corroboration.

        Example: remem share candidates --json
        """
        from remem.engine import share

        with open_store() as store:
            rows = share.candidates(store)
        if json_out:
            emit_json(rows)
            return
        if not rows:
            print("no candidates")
            return
        # Four columns, so the lesson gets the width in an 80-column terminal; an origin is shown
        # by its first 8 digits (`share trust` refuses a prefix, naming the full ids it matches).
        table("candidates", ["id", "from", "lesson", "checks"], [
            (r["id"], r["origin"][:8] + (f" {r['origin_label']}" if r.get("origin_label") else ""),
             short(r["text"], 60),
             "quarantined: " + "; ".join(r["safety"]["reasons"]) if r["status"] == "quarantined" else
             ("trusted" if r["origin_trusted"] else "untrusted") + " origin; "
             + f"{len(r['corroboration']['trusted_origins'])} trusted agree"
             + (f"; yours {r['corroboration']['closest_own']['cosine']:.2f}"
                if r["corroboration"]["closest_own"] else "")
             + (f"; for {r['project']}" if r.get("project") else ""))
            for r in rows])
        # Why a lesson for a project waits, and how to take it, said in full below the table.
        for r in rows:
            if r.get("waits"):
                print(f"{safe(r['id'])} waits: {safe(r['waits'])}; "
                      f"`remem share accept {safe(r['id'])} --project DIR` takes it for a folder of yours")
        print("next: remem share accept ID · remem share reject ID · remem share trust ORIGIN")
        print("      (ORIGIN: the full 16-digit id `remem share peers` lists)")

    @share_app.command("accept")
    def accept(lesson_id: str = typer.Argument(..., help="A candidate's id."),
               force: bool = typer.Option(False, "--force", help="Accept a quarantined lesson too."),
               project: Optional[str] = typer.Option(
                   None, "--project", help="The folder it applies in here: needed by a lesson for a "
                   "project this memory has not seen (or has several of); a path, or a known project's name."),
               folder: Optional[str] = typer.Option(None, "--folder", help=FOLDER_HELP),
               json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """Make a received lesson active (a confirmation goes back to its author).

        Example: remem share accept 1a2b3c4d5e6f --project ~/code/shop-api
        """
        from remem.commands.core import project_folder
        from remem.engine import share

        with open_store() as store, _candidate_ids(lesson_id):
            where = project_folder(store, project) if project is not None else None
            done = share.accept(store, lesson_id, force=force, folder=folder, project=where)
        if json_out:
            emit_json(done)
            return
        scope = f" (in {safe(done['cwd'])})" if done.get("cwd") else ""
        print(f"accepted {safe(done['id'])}{scope}: {short(done['text'])}")
        if done.get("warning"):
            print(f"warning: {safe(done['warning'])}", file=sys.stderr)

    @share_app.command("reject")
    def reject(lesson_id: Optional[str] = typer.Argument(None, help="A received lesson's id."),
               origin: Optional[str] = typer.Option(
                   None, "--origin", help="Reject every lesson still waiting (candidate or quarantined) "
                   "that this origin (its full id) sent, instead of one id."),
               folder: Optional[str] = typer.Option(None, "--folder", help=FOLDER_HELP),
               json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """Refuse a received lesson; the same lesson never comes back (and our confirmation
        of it, if we had one, leaves the share folder).

        Example: remem share reject 1a2b3c4d5e6f
        """
        from remem.engine import share

        if (lesson_id is None) == (origin is None):
            raise RememError("give one lesson id, or --origin ORIGIN for all its waiting lessons "
                             "(`remem share candidates` lists both)")
        if origin is not None:
            _reject_origin(origin, json_out)
            return
        assert lesson_id is not None
        with open_store() as store, _candidate_ids(lesson_id):
            done = share.reject(store, lesson_id, folder=folder)
        if json_out:
            emit_json(done)
            return
        print(f"rejected {safe(done['id'])}: {short(done['text'])}")
        if done.get("warning"):
            print(f"warning: {safe(done['warning'])}", file=sys.stderr)

    @share_app.command("revoke")
    def revoke(lesson_id: str = typer.Argument(..., help="One of your lessons' id."),
               folder: Optional[str] = typer.Option(None, "--folder", help=FOLDER_HELP),
               json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """Withdraw one of your lessons everywhere (a signed revocation).

        Example: remem share revoke 1a2b3c4d5e6f
        """
        from remem.engine import share

        root = share.resolve_folder(folder)
        with open_store() as store:
            done = share.revoke(store, lesson_id, root)
        if json_out:
            emit_json(done)
            return
        print(f"revoked {safe(done['id'])}; receivers retire it on their next sync ({done['revocation']})")


def _reject_origin(given: str, json_out: bool) -> None:
    """`reject --origin`: every lesson the origin sent that still waits for a decision."""
    from remem.engine.share_choices import reject_origin

    with open_store() as store:
        origin, done = reject_origin(store, given)
    if json_out:
        emit_json({"origin": origin, "rejected": done})
        return
    print(f"rejected {len(done)} waiting lesson(s) from {origin}; none of them comes back "
          f"(what it sends later arrives as new candidates; `remem share block {origin}` stops reading it)")


@contextmanager
def _candidate_ids(lesson_id: str) -> Iterator[None]:
    """A wrong id points at the candidates list, where accept and reject take their ids."""
    try:
        yield
    except NotFound:
        raise RememError(f"no received lesson with id {lesson_id!r}; `remem share candidates` shows "
                         "the ids") from None
