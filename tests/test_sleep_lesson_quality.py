"""Sleep, lessons and render at their edges: corrections about other programs folded
into one lesson, pushback with nothing to learn made a lesson, an error's output taken for its
command, a closing quote dropped, a MEMORY.md whose markers were deleted listed lessons twice,
render counts that left out MEMORY.md and said nothing in a dry run, summary keys present only
sometimes, a merged-away id that worked only in full, a circular "no lessons" message, and
"I told you already" left half on.

Real store in a tmp REMEM_HOME (conftest), the real bundled model, the real sleep.
"""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.engine import clock, consolidate, lesson_text, render, render_files, render_text, sleep
from remem.engine.lessons import add_lesson, get_lesson, merge_into
from remem.engine.lessons_pass import waiting, waiting_text
from tests.test_render import project
from tests.test_sleep import _at, episode, lessons, run

# --------------------------------------------------------------------------- 1. other programs


def _texts(store) -> list[tuple[int, str]]:
    return sorted((l["seen"], l["text"]) for l in lessons(store) if l["status"] == "active")


def test_corrections_about_other_programs_never_fold_into_one_lesson(store):
    """"Use yarn, not npm." was folded into "Use pnpm, not npm." (cosine 0.63, the cut 0.62),
    and "use ruff for linting" into "use black for formatting" (`black` is no known program):
    the lesson spoke for one of them only. The merge pass keeps them apart too."""
    said = ["Use pnpm, not npm.", "Use yarn, not npm.",
            "use black for formatting python code", "use ruff for linting python code"]
    with clock.frozen(_at(48)):
        store.put_episodes([episode(f"c{n}", "correction", text, hours=n) for n, text in enumerate(said)])
        summary = run(store)
    assert _texts(store) == sorted((1, lesson_text.imperative(text)) for text in said)
    assert summary["passes"]["merge"]["aliased"] == 0


def test_templated_corrections_naming_different_tools_make_one_lesson_each(store):
    """60 corrections alike but for the tool they name became one lesson naming only `gh`."""
    tools = ["pnpm", "uv", "cargo", "poetry", "terraform", "kubectl", "docker", "gh", "ruff", "pytest"]
    with clock.frozen(_at(48)):
        store.put_episodes([episode(f"t{n}", "correction",
                                    f"for the backend part, always invoke {tool} with the verbose flag #{n}",
                                    hours=n) for n, tool in enumerate(tools)])
        run(store)
    found = _texts(store)
    assert len(found) == len(tools) and all(seen == 1 for seen, _ in found)
    assert sorted(t for t in tools if any(f" {t} " in text for _, text in found)) == sorted(tools)


def test_a_correction_about_the_same_program_still_joins(store):
    """"use pnpm" is about what "Use pnpm, not npm." is about: one lesson, seen twice."""
    with clock.frozen(_at(48)):
        store.put_episodes([episode("c1", "correction", "no, use pnpm not npm", hours=1),
                            episode("c2", "correction", "use pnpm please", hours=2)])
        run(store)
    [lesson] = lessons(store)
    assert lesson["sources"] == ["c1", "c2"]


_TOPICS = st.sampled_from([consolidate.topic_of(text) for text in (
    "", "never use npm", "Use pnpm, not npm.", "Use yarn, not npm.", "use ruff for linting", "use uv, not pip")])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), topics=st.lists(_TOPICS, min_size=3, max_size=40), block=st.integers(1, 12))
def test_a_group_only_holds_corrections_about_its_programs_in_blocks_or_one_at_a_time(seed, topics, block):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(1, 8)) + 0.05 * rng.normal(size=(len(topics), 8))  # all alike
    vecs = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    ids = [f"e{i}" for i in range(len(topics))]

    def grouped(size: int) -> list[tuple[list[str], consolidate.Topic]]:
        old, consolidate.BLOCK = consolidate.BLOCK, size
        try:
            groups: list[consolidate.Group] = []
            for _ in consolidate.consolidate_kind("correction", groups, [], np.zeros((0, 8), np.float32), [],
                                                  ids, vecs, [""] * len(ids), 0.5, None, None, [], topics):
                pass
        finally:
            consolidate.BLOCK = old
        return [(g.members, g.topic) for g in groups]

    one = grouped(1)
    assert grouped(block) == one
    for members, topic in one:
        for m in members:  # each meets the lesson it is in, and names nothing it does not
            said = topics[ids.index(m)]
            assert consolidate.same_programs(said, topic)
            assert said.names <= topic.names and bool(said.names) == bool(topic.names)


def test_the_merge_pass_keeps_lessons_about_other_programs_apart():
    same = np.ones((4, 3), dtype=np.float32) / np.sqrt(3)
    topics = [consolidate.topic_of(text) for text in ("Use pnpm, not npm.", "Use yarn, not npm.",
                                                      "use black for formatting", "use pnpm")]
    clusters = consolidate.merge_groups(same, [1, 1, 1, 1], 0.6, [True] * 4, topics=topics)
    assert clusters == [[0, 3]]  # "use pnpm" with "Use pnpm, not npm"; yarn and the unnamed alone


# --------------------------------------------------------------------------- 2. nothing to learn

def test_pushback_that_says_nothing_makes_no_lesson_and_the_sleep_says_why(store, cli):
    """"No, that's wrong." became an active lesson primed to agents."""
    with clock.frozen(_at(48)):
        store.put_episodes([episode("n1", "correction", "No, that's wrong.", hours=1),
                            episode("n2", "correction", "no, that's not it", hours=2),
                            episode("c1", "correction", "I told you already: the port is 8080, not 3000", hours=3)])
        summary = run(store)
        again = run(store)
    assert _texts(store) == [(1, "The port is 8080, not 3000.")]
    assert summary["passes"]["lessons"]["unclear"] == 2 and summary["waiting"]["unclear"] == 2
    assert again["passes"]["lessons"]["unclear"] == 0  # told once as new
    told = waiting_text(waiting(store))
    assert told and told.startswith("2 corrections said only that something was wrong, so they make no lesson")
    out = cli("sleep").stdout
    assert "2 corrections said only that something was wrong" in out
    assert "2 corrections said only that something was wrong" in cli("morning").stdout


def test_imperative_takes_i_told_you_already_off_whole():
    assert lesson_text.imperative("I told you already: the port is 8080, not 3000") == "The port is 8080, not 3000."
    assert lesson_text.imperative("i've told you twice, use pnpm") == "Use pnpm."
    assert lesson_text.says_nothing("nope, that's not what I asked for")
    assert not lesson_text.says_nothing("not that one, the staging one")


# --------------------------------------------------------------------------- 3. errors no call made

def _told_error(i: str, title: str, detail: str, hours: float) -> dict:
    return episode(i, "error", detail, hours=hours, title=title)


def test_a_reported_error_is_named_by_the_command_in_its_title_and_a_line_number_keeps_nothing_apart(store):
    """Two "make deploy failed" reports whose output differed in a line number each waited,
    seen once; a lesson quoted the output as if it were the command."""
    with clock.frozen(_at(48)):
        store.put_episodes([
            _told_error("d1", "make deploy failed: AWS_PROFILE unbound",
                        "deploy.sh: line 12: AWS_PROFILE: unbound variable\nexit status 1", 1),
            _told_error("d2", "make deploy failed: AWS_PROFILE unbound",
                        "deploy.sh: line 14: AWS_PROFILE: unbound variable\nexit status 1", 30),
            _told_error("b1", "npm run build failed", "npm run build failed: Cannot find module 'react'", 2),
            _told_error("b2", "npm run build failed", "npm run build failed: Cannot find module 'react'", 31),
        ])
        run(store)
    assert _texts(store) == [
        (2, "`make deploy` failed here (AWS_PROFILE unbound); find out why before running it again."),
        (2, "`npm run build` failed here (Cannot find module 'react'); find out why before running it again.")]


# --------------------------------------------------------------------------- 4. quotes

def test_a_closing_quote_another_quote_opened_stays():
    ep = {"title": "ModuleNotFoundError: No module named 'requests'",
          "gist": "ModuleNotFoundError: No module named 'requests'"}
    assert lesson_text.draft("error", [ep]).endswith("No module named 'requests'.")
    assert lesson_text.imperative("'use pnpm'") == "Use pnpm."


@given(st.text(alphabet="abc xyz", min_size=1, max_size=30).filter(str.strip))
def test_quotes_are_taken_off_only_around_the_whole_text(words):
    assert lesson_text.imperative(f'"{words}"') == lesson_text.imperative(words)
    said = " ".join(words.split())  # one space between words, as a lesson has them
    assert lesson_text.imperative(f"run x named '{said}'").endswith(f"'{said}'.")


# --------------------------------------------------------------------------- 5, 6. render

def test_memory_md_whose_markers_were_deleted_lists_each_lesson_once(store):
    folder = project("/home/u/a")
    keep = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"])
    gone = add_lesson(store, "Never push to main.", "correction", sources=["y"])
    render.render(store)
    memory = folder / "MEMORY.md"
    text = memory.read_text()
    memory.write_text("# mine\n\n" + "".join(l + "\n" for l in text.splitlines()
                                             if l.strip() not in (render_text.BEGIN, render_text.END)))
    (folder / render_files.lesson_filename(gone["id"])).unlink()  # a veto
    render.render(store)
    text = memory.read_text()
    assert text.startswith("# mine\n")
    assert text.count(render_text.HEADING) == 1 and text.count(render_text.BEGIN) == 1
    assert text.count(render_files.lesson_filename(keep["id"])) == 1
    assert render_files.lesson_filename(gone["id"]) not in text


def test_render_counts_memory_md_and_a_dry_run_says_what_it_would_write(store):
    folder = project("/home/u/a")
    add_lesson(store, "Use uv, not pip.", "correction", sources=["x"])
    would = sleep.run_sleep_collect(store, passes=["render"], dry_run=True)["passes"]["render"]
    assert would["written"] == 2 and would["dry_run"] is True  # the lesson file and MEMORY.md
    assert not folder.exists() or not any(folder.iterdir())
    from remem.engine.sleep_describe import describe_pass
    assert "would write 2 files" in describe_pass("render", would)
    assert render.render(store)["written"] == 2
    (folder / "MEMORY.md").write_text((folder / "MEMORY.md").read_text() + "\nmine\n")
    lesson = add_lesson(store, "Never push to main.", "correction", sources=["y"])
    assert render.render(store)["written"] == 2  # its file, and MEMORY.md's index
    (folder / render_files.lesson_filename(lesson["id"])).unlink()
    out = sleep.run_sleep_collect(store, passes=["render"], dry_run=True)["passes"]["render"]
    assert out["vetoed"] == 1 and out["written"] == 1  # MEMORY.md would lose its line


# --------------------------------------------------------------------------- 7. keys

def test_the_summary_has_every_key_whether_or_not_anything_happened(store):
    with clock.frozen(_at(48)):
        run(store)
        summary = run(store)  # no lifecycle task is due again
    expire = summary["passes"]["expire"]
    assert expire["ran"] == 0 and (expire["expired"], expire["decayed"], expire["deleted"]) == (0, 0, 0)
    assert summary["events"]["contradicted"] == [] and summary["passes"]["verify"]["withdrawn"] == 0


# --------------------------------------------------------------------------- 8. aliases

def test_a_merged_away_id_may_be_shortened_like_any_other(store):
    theme = add_lesson(store, "Use uv, not pip.", "correction", sources=["x"], lesson_id="aaaa11112222")
    other = add_lesson(store, "Use uv for packages.", "correction", sources=["y"], lesson_id="bbbb33334444")
    merge_into(store, theme["id"], other["id"])
    assert get_lesson(store, other["id"][:6])["id"] == theme["id"]
    assert get_lesson(store, other["id"])["id"] == theme["id"]


# --------------------------------------------------------------------------- 9. an empty list

def test_listing_every_status_of_an_empty_memory_says_why_not_to_list_every_status(cli):
    out = cli("lessons", "list", "--status", "all").stdout
    assert "--status all" not in out and out.startswith("no lessons yet:")
    assert "no lessons of kind error; without --kind" in cli("lessons", "list", "--status", "all",
                                                               "--kind", "error").stdout


def test_json_shape_of_the_waiting_counts_keeps_unclear_without_pushback(store):
    with clock.frozen(_at(48)):
        store.put_episodes([episode("c1", "correction", "use uv, not pip", hours=1)])
        summary = run(store)
    assert summary["waiting"]["unclear"] == 0 and summary["passes"]["lessons"]["unclear"] == 0
    json.dumps(summary)
