"""A new person's first steps with the real `remem` executable: help, errors, the demo."""

from __future__ import annotations

import pytest

from tests.conftest import run_remem


def one_line_error(result, *words: str) -> str:
    """Exit 1, one line on stderr, no traceback, naming each of `words`."""
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("remem: ") and "Traceback" not in result.stderr
    assert "unexpected error" not in lines[0], lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("args, words", [
    (["graph"], ["missing argument", "remem graph --help"]),
    (["recall"], ["missing argument", "remem recall --help"]),
    (["recall", "x", "--k", "3"], ["--k", "remem recall --help"]),
    (["recall", "x", "-k", "many"], ["-k", "remem recall --help"]),
    (["no-such-command"], ["no-such-command", "remem --help"]),
    (["--no-such-option"], ["--no-such-option", "remem --help"]),
    (["lessons", "bogus"], ["bogus", "remem lessons --help"]),
    (["status", "--home", "/tmp"], ["--home goes before the command", "remem --home DIR status"]),
])
def test_usage_errors_are_one_line_naming_the_help(args: list[str], words: list[str]) -> None:
    line = one_line_error(run_remem(*args), *words)
    assert "-m remem" not in line  # named as the person types it


@pytest.mark.parametrize("command", [["recall", "x"], ["list"], ["lessons", "list"], ["status"],
                                     ["share", "peers"], ["call", "recall", '{"query": "x"}']])
def test_a_mistyped_home_is_named_not_created(tmp_path, command: list[str]) -> None:
    typo = tmp_path / "remem-dmeo"
    one_line_error(run_remem("--home", str(typo), *command), "no memory at", str(typo), "ingest")
    assert not typo.exists()  # nothing created: the next run with the same typo says it again
    assert run_remem("--home", str(typo), *command, "--help").returncode == 0
    assert run_remem("--home", str(typo), "remember", "a first memory").returncode == 0  # writers start one
    assert run_remem("--home", str(typo), *command).returncode == 0


def test_demo_builds_where_home_points_and_never_empties_a_real_memory(tmp_path) -> None:
    demo = tmp_path / "demo"
    assert run_remem("--home", str(demo), "demo").returncode == 0
    assert (demo / "memory.db").exists()
    real = tmp_path / "real"
    assert run_remem("--home", str(real), "remember", "keep me").returncode == 0
    one_line_error(run_remem("--home", str(real), "demo"), "is not a remem demo")
    assert "keep me" in run_remem("--home", str(real), "list").stdout


def test_ids_in_narrow_tables_are_never_folded(home) -> None:
    ids = []
    for i in range(3):
        out = run_remem("remember", f"note {i} " + "with quite a few words to fill the memory column " * 3,
                        "--json")
        ids.append(out.json()["id"])
    listing = run_remem("list", env={"COLUMNS": "60"}).stdout
    for memory_id in ids:  # whole on one line, so it can be copied into the next command
        assert any(memory_id[:8] in line for line in listing.splitlines()), listing


def test_an_events_ingest_counts_as_an_ingest_and_a_note_does_not(home, tmp_path) -> None:
    assert run_remem("remember", "a note by hand").returncode == 0
    assert run_remem("status", "--json").json()["last_ingest"] is None
    events = tmp_path / "events.jsonl"
    events.write_text('{"v":1,"at":"2026-11-29T10:00:00Z","kind":"correction",'
                      '"text":"never run migrations on prod by hand"}\n')
    assert run_remem("ingest", "--events", str(events), "--quiet").returncode == 0
    assert run_remem("status", "--json").json()["last_ingest"] is not None
    g8 = {g["id"]: g for g in run_remem("goals", "--json").json()}["G8"]
    assert g8["status"] == "pass"


def test_restore_of_a_missing_or_foreign_file_keeps_the_memory(home, tmp_path) -> None:
    assert run_remem("remember", "keep me").returncode == 0
    missing = tmp_path / "no-such-backup.db"
    one_line_error(run_remem("restore", str(missing), "--yes"), "no backup at", "remem backup")
    assert not missing.exists()  # never created as an empty database
    foreign = tmp_path / "notes.db"
    foreign.write_text("not a database\n")
    one_line_error(run_remem("restore", str(foreign), "--yes"), "not a remem backup")
    assert "keep me" in run_remem("recall", "keep me").stdout


def test_ingest_of_a_path_that_does_not_exist_is_an_error(tmp_path) -> None:
    one_line_error(run_remem("ingest", str(tmp_path / "nowhere")), "no such file or folder", "nowhere")
    one_line_error(run_remem("ingest", "--events", str(tmp_path / "none.jsonl")), "none.jsonl")


def test_config_set_errors_name_the_type_and_where_the_keys_are() -> None:
    one_line_error(run_remem("config", "set", "recall.k", "many"), "recall.k must be a whole number")
    one_line_error(run_remem("config", "set", "no.such_key", "3"), "no.such_key", "remem config show")


def test_demo_shows_what_it_learned_and_every_browse_command_works(home, tmp_path) -> None:
    import shlex

    demo_dir = tmp_path / "demo"
    out = run_remem("demo", "--dir", str(demo_dir))
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "sample sessions ingested" in text and "sleep learned" in text
    assert "We use uv here, not pip." in text  # the lesson itself, not just a count
    commands = [line.strip() for line in text.splitlines() if line.strip().startswith("remem --home")]
    verbs = {shlex.split(c)[3] for c in commands}
    assert {"status", "recall", "lessons", "morning", "context", "tui"} <= verbs
    for command in commands:
        args = shlex.split(command)[1:]
        if "tui" in args:
            continue  # interactive; tests/tui drives it
        result = run_remem(*args)
        assert result.returncode == 0, (command, result.stderr)
        assert result.stdout.strip(), command
    context = [c for c in commands if " context " in c][0]
    assert "uv" in run_remem(*shlex.split(context)[1:]).stdout  # the lesson reaches the prompt
    assert not (home / "memory.db").exists()  # the person's own memory is untouched


def test_every_command_and_group_has_help_with_an_example(cli) -> None:
    """`remem X --help` for every command and subcommand: a summary line and an example."""
    from typer.main import get_command

    from remem.cli import app

    def walk(command, path):  # type: ignore[no-untyped-def]
        yield path
        for name, sub in (getattr(command, "commands", None) or {}).items():
            yield from walk(sub, path + [name])

    missing = []
    for path in walk(get_command(app), []):
        if path[:1] == ["hook"]:
            continue
        result = cli(*path, "--help")
        assert result.exit_code == 0, (path, result.output)
        if "Example" not in result.output:
            missing.append(" ".join(path) or "remem")
    assert not missing, f"no example in --help of: {missing}"


def test_the_demo_memory_keeps_its_own_agent_homes(home, tmp_path) -> None:
    """Browsing the demo (and running its sleep) never reads or writes the real ~/.claude."""
    user = tmp_path / "user"
    demo_dir = user / ".remem-demo"
    assert run_remem("demo", "--dir", str(demo_dir)).returncode == 0
    unset = {"CLAUDE_CONFIG_DIR": "", "CODEX_HOME": "", "HOME": str(user)}
    assert run_remem("--home", str(demo_dir), "sleep", "--quiet", env=unset).returncode == 0
    rendered = list((demo_dir / "claude" / "projects").glob("*/memory/remem-*.md"))
    assert rendered, "the demo's lesson files were removed by its own sleep"
    assert not (user / ".claude").exists() and not (user / ".codex").exists()
    paths = run_remem("--home", str(demo_dir), "paths", "--json", env=unset).json()
    assert str(demo_dir / "claude") in str(paths)


def test_a_reader_that_stops_early_gets_no_traceback(home, tmp_path) -> None:
    """`remem export | head -1`: remem stops quietly when the pipe closes."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    demo_dir = tmp_path / "demo"
    assert run_remem("demo", "--dir", str(demo_dir)).returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "remem", "--home", str(demo_dir), "export"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(ROOT),
                            env=dict(os.environ))
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in err and "unexpected error" not in err, err


def test_tui_times_read_as_words() -> None:
    """The overview and sleep history said 'last sleep: now ago'."""
    from remem.engine import clock
    from remem.tui.widgets.format import since

    with clock.frozen("2026-11-20T12:00:00+00:00"):
        assert since("2026-11-20T11:59:59+00:00") == "just now"
        assert since("2026-11-20T07:00:00+00:00") == "5h ago"
        assert since("2026-11-21T07:00:00+00:00") == "soon"
        assert since(None) == "-"


def test_status_of_a_new_memory_says_how_to_fill_it(home) -> None:
    out = run_remem("status")
    assert out.returncode == 0, out.stderr
    assert f"remem memory at {home}" in out.stdout  # on one line, however long the path
    assert "remem ingest" in out.stdout and "remem demo" in out.stdout
    assert "last sleep:       never" in out.stdout


def test_setup_on_a_machine_without_agents_says_so(home) -> None:
    out = run_remem("setup", "--dry-run")
    assert out.returncode == 0, out.stderr
    assert "no agent found" in out.stderr and "--agent" in out.stderr


def test_context_outside_the_lessons_projects_points_at_one(home, tmp_path) -> None:
    demo_dir = tmp_path / "demo"
    assert run_remem("demo", "--dir", str(demo_dir)).returncode == 0
    out = run_remem("--home", str(demo_dir), "context", "--project", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "other projects" in out.stdout and "remem context --project /" in out.stdout
    assert "lessons come from `remem sleep`" not in out.stdout  # sleep already ran


def test_share_accept_of_an_unknown_id_points_at_the_candidates() -> None:
    one_line_error(run_remem("share", "accept", "nosuch"), "nosuch", "remem share candidates")
    one_line_error(run_remem("share", "reject", "nosuch"), "nosuch", "remem share candidates")


def test_top_level_help_lists_whole_summaries_starting_with_the_demo() -> None:
    out = run_remem("--help")
    assert out.returncode == 0
    commands = out.stdout.split("Commands:", 1)[1]
    assert commands.split()[0] == "demo"
    assert "..." not in commands  # summaries are wrapped, never cut
    assert "nightly `remem sleep`" in " ".join(commands.split())
    for group in ("lessons", "share", "config"):
        sub = run_remem(group, "--help").stdout.split("Commands:", 1)[1]
        assert "..." not in sub, group


def test_export_and_import_name_a_wrong_path_in_one_line(tmp_path) -> None:
    one_line_error(run_remem("export", str(tmp_path / "no" / "such" / "dir.jsonl")), "no folder")
    one_line_error(run_remem("export", str(tmp_path)), "is a folder")
    stranger = tmp_path / "notes.txt"
    stranger.write_text("hello\n")
    one_line_error(run_remem("import", str(stranger)), "nothing imported", "remem export")
    binary = tmp_path / "blob.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    # Read as text with undecodable bytes replaced (as `remem import -` reads stdin): no line
    # of it is an export record, and the line says what import reads.
    one_line_error(run_remem("import", str(binary)), "nothing imported", "remem export")


def test_lessons_list_filters_are_checked_and_an_empty_filter_says_so(home, tmp_path) -> None:
    one_line_error(run_remem("lessons", "list", "--kind", "bogus"), "--kind must be one of")
    demo_dir = tmp_path / "demo"
    assert run_remem("demo", "--dir", str(demo_dir)).returncode == 0
    out = run_remem("--home", str(demo_dir), "lessons", "list", "--status", "vetoed")
    assert out.returncode == 0 and "no vetoed lessons" in out.stdout


def test_a_path_that_cannot_be_written_is_named(tmp_path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    one_line_error(run_remem("backup", str(blocker / "sub" / "x.db")), "cannot use", "a-file")


def test_a_broken_config_stops_commands_in_one_line_and_doctor_names_it(home) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("[recall\nk = = 3\n")
    one_line_error(run_remem("status"), "config.toml", "not valid TOML")
    doctor = run_remem("doctor", "--no-run", "--json")
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr, doctor.stderr  # a problem found
    assert any("config.toml" in p["problem"] for p in doctor.json()["problems"])


def test_hook_without_an_event_names_the_events() -> None:
    out = run_remem("hook", input="")
    assert out.returncode == 0  # a hook never fails the agent
    assert "None" not in out.stderr and "prompt, pre-tool, stop" in out.stderr


def test_tui_without_a_terminal_says_so_instead_of_hanging() -> None:
    one_line_error(run_remem("tui", input="", timeout=30), "needs a terminal", "--json")


def test_multi_line_examples_keep_their_lines(cli) -> None:
    out = cli("proxy", "--help").output
    assert "\n  then:    OPENAI_BASE_URL=" in out  # not run together into the line before


def test_setup_refuses_to_wire_real_agents_to_the_demo(home, tmp_path) -> None:
    user = tmp_path / "user"
    demo_dir = user / ".remem-demo"
    assert run_remem("demo", "--dir", str(demo_dir)).returncode == 0
    one_line_error(run_remem("--home", str(demo_dir), "setup", "--yes"), "demo memory", "without --home")
    assert not (user / ".claude.json").exists() and not (user / ".config").exists()


def test_ingest_with_no_sessions_anywhere_says_where_it_looked() -> None:
    out = run_remem("ingest")
    assert out.returncode == 0, out.stderr
    assert "no agent sessions found" in out.stderr and "remem demo" in out.stderr


def test_a_share_folder_that_is_missing_or_a_file_is_named(tmp_path) -> None:
    one_line_error(run_remem("share", "sync"), "no share folder", "remem config set share.folder")
    # A missing folder whose parent is there is made (a sync tool's folder); one further down
    # a path that is not there is named, against the option that gave it.
    one_line_error(run_remem("share", "sync", "--folder", str(tmp_path / "gone" / "deeper")),
                   "does not exist", "--folder")
    afile = tmp_path / "afile"
    afile.write_text("")
    one_line_error(run_remem("share", "sync", "--folder", str(afile)), "is a file, not a folder")


def test_a_short_term_memory_says_when_it_expires_in_plain_words() -> None:
    out = run_remem("remember", "staging is down", "--ttl", "2h", env={"REMEM_NOW": "2026-11-29T10:00:00+00:00"})
    assert out.returncode == 0, out.stderr
    assert "(short-term, expires 2026-11-29 12:00 UTC)" in out.stdout


def test_memories_that_look_like_markup_are_printed_as_written(home) -> None:
    """Tables print stored text as it is: "[/b]" or "[red]" in a memory is not rich markup
    (it used to end the command with a MarkupError)."""
    odd = "pin arr[/b] to [red]v2[/red] [link=x]y"
    assert run_remem("remember", odd).returncode == 0
    for args in (["list"], ["recall", "pin arr v2"]):
        res = run_remem(*args, env={"COLUMNS": "200"})
        assert res.returncode == 0, res.stderr
        assert "arr[/b] to [red]v2[/red]" in res.stdout, args


@pytest.mark.parametrize("args, words", [
    (["list", "--since", "9999999999d"], ["since", "too far back"]),
    (["recall", "x", "--until", "9999999999w"], ["until", "too far back"]),
    (["remember", "x", "--ttl", "99999999999d"], ["ttl", "from 1s to 36500d"]),
    (["remember", "x", "--ttl", "1e999d"], ["not a duration"]),
    (["measure", "--days", "99999999"], ["--days", "36500"]),
    (["goals", "--days", "99999999"], ["--days", "36500"]),
    (["goals", "--days", "-1"], ["--days must be at least 1"]),
    (["compare", "-k", "-3"], ["-k must be between 1 and 100"]),
    (["list", "--offset", "-5"], ["--offset must be 0 or more"]),
    (["list", "--kind", "foo"], ["unknown kind 'foo'", "correction"]),
])
def test_out_of_range_numbers_and_kinds_are_refused_in_one_line(home, args, words) -> None:
    one_line_error(run_remem(*args), *words)


def test_text_arguments_that_are_not_utf8_are_repaired_not_a_crash(home) -> None:
    import os

    raw = os.fsdecode(b"caf\xe9 latte order note")  # what Python makes of a Latin-1 argument
    out = run_remem("remember", raw, "--tag", os.fsdecode(b"t\xe9a"))
    assert out.returncode == 0, out.stderr
    found = run_remem("recall", os.fsdecode(b"caf\xe9 latte"), "--json")
    assert found.returncode == 0, found.stderr
    hit = found.json()[0]
    assert hit["text"] == "caf\ufffd latte order note" and hit["tags"] == ["t\ufffda"]


def test_every_embedder_takes_text_that_is_not_valid_unicode() -> None:
    from remem.engine.embed import HashedEmbedder, get_embedder

    for embedder in (get_embedder(), HashedEmbedder()):
        for text in ("caf\udce9 note", "half an emoji \ud83d here"):
            assert embedder.encode([text]).shape == (1, embedder.dim)
            assert len(embedder.encode_py(text)) == embedder.dim
