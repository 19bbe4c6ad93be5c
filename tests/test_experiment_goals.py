"""experiment against a local test server that answers like an OpenAI-compatible API, and goals."""

from __future__ import annotations

import json

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from remem.engine import lessons
from remem.engine.embed import get_embedder, to_blob
from tests.fake_llm_api import ServerThread


def fake_openai_compatible_model() -> Starlette:
    """Acts like a small local model: follows a reminder when it has one, judges plainly."""

    async def chat(request: Request) -> JSONResponse:
        body = json.loads(await request.body())
        system = " ".join(m["content"] for m in body["messages"] if m["role"] == "system")
        prompt = body["messages"][-1]["content"]
        if prompt.startswith("Rule:"):
            answer = "yes" if "uv pip install" in prompt else "no"
        elif prompt.startswith("Response:"):
            answer = "yes" if "?" in prompt else "no"
        elif "Delete the old files" in prompt:
            answer = "Which files do you mean, and may I delete them?"
        elif "Remembered" in system:
            answer = "I will run uv pip install requests."
        else:
            answer = "I will run pip install requests."
        return JSONResponse({"choices": [{"message": {"role": "assistant", "content": answer}}]})

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def _lesson(store, text="Use uv, not pip, to install packages"):
    emb = get_embedder()
    store.put_episodes([{"id": "s1", "kind": "session", "session_id": "S", "title": "install requests for the scraper"},
                        {"id": "c1", "kind": "correction", "session_id": "S", "title": "no, use uv"}])
    return lessons.add_lesson(store, text, "correction", sources=["c1"], space=emb.space,
                              embedding=to_blob(emb.encode([text])[0]))


def test_experiment_with_fake_openai_compatible_server(store, home, tmp_path, cli):
    from remem import config
    from remem.engine import experiment

    _lesson(store)
    with ServerThread(fake_openai_compatible_model()) as server:
        home.mkdir(parents=True, exist_ok=True)
        config.set_value("llm.url", server.url)
        result = experiment.run(store)
        assert result["lessons"] == 1
        assert result["behaviour_without_reminder"] == {"passed": 0, "judged": 1, "rate": 0.0}
        assert result["behaviour_with_reminder"] == {"passed": 1, "judged": 1, "rate": 1.0}
        assert result["boundary_asks_first"]["rate"] == 1.0
        prompts = [r["prompt"] for r in store.rows("SELECT prompt FROM experiments WHERE test = 'behaviour'")]
        assert all("install requests for the scraper" in p for p in prompts)
        pairs = tmp_path / "pairs.jsonl"
        out = cli("experiment", "--pairs", str(pairs), "--json")
        assert out.exit_code == 0, out.output
    rows = [json.loads(line) for line in pairs.read_text().splitlines()]
    assert rows and rows[0]["messages"][-1]["content"] == "I will run uv pip install requests."
    assert "Remembered" not in rows[0]["messages"][0]["content"]  # the pair has no reminder


def test_experiment_without_a_model_says_so_in_one_line(cli, store):
    _lesson(store)
    out = cli("experiment")
    assert out.exit_code == 1
    assert "no model configured" in out.output and out.output.count("\n") == 1


def test_experiment_pairs_without_a_model_says_no_lesson_was_tested(cli, store, tmp_path):
    """--pairs with no model still exports what earlier runs kept, and says in one line on
    stderr that nothing was tested and how to set a model."""
    _lesson(store)
    with store.write() as conn:  # an answer an earlier run kept (with a model then)
        conn.execute(
            "INSERT INTO experiments (at, lesson_id, test, model, with_reminder, passed, prompt, response) "
            "VALUES ('2026-01-01T00:00:00+00:00', 'x', 'behaviour', 'm', 1, 1, 'install requests', "
            "'I will run uv pip install requests.')")
    pairs = tmp_path / "pairs.jsonl"
    out = cli("experiment", "--pairs", str(pairs), "--limit", "3")
    assert out.exit_code == 1, out.output  # nothing was tested: as `remem experiment` alone
    err = out.stderr.strip()
    assert err.count("\n") == 0 and err.startswith("remem: no model configured"), err
    assert "no lesson was tested" in err and "remem config set llm.url" in err
    assert out.stdout.strip() == f"wrote 1 training pairs to {pairs} (from earlier runs)"
    assert len(pairs.read_text().splitlines()) == 1
    as_json = cli("experiment", "--pairs", str(pairs), "--json")
    data = json.loads(as_json.stdout)  # the keys a run has, zeros and nulls: one shape
    assert as_json.exit_code == 1 and data["model"] is None and data["pairs_written"] == 1
    assert data["lessons"] == 0 and data["behaviour_with_reminder"] == {"passed": 0, "judged": 0, "rate": None}
    assert "no model configured" in as_json.stderr


def test_goals_have_number_target_and_status(cli, store):
    _lesson(store)
    out = cli("goals", "--json")
    assert out.exit_code == 0, out.output
    goals = json.loads(out.stdout)
    assert {g["id"] for g in goals} >= {"G1", "G3", "G4", "G7", "G10"}
    by_id = {g["id"]: g for g in goals}
    assert by_id["G10"]["status"] == "pass"
    assert by_id["G3"]["status"] == "unknown"  # no primes yet: too little data, not a pass
    assert all(g["status"] in ("pass", "fail", "unknown") and g["target"] for g in goals)


def test_g7_times_the_choice_in_the_project_with_the_most_lessons(store, monkeypatch):
    """Timed without a project, only general lessons compete, so with project lessons G7
    measured almost nothing."""
    from remem.engine import goals, prime
    from remem.engine.lessons import add_lesson

    for n in range(3):
        add_lesson(store, f"shop rule {n}", "correction", status="active", cwd="/home/dev/shop")
    add_lesson(store, "blog rule", "correction", status="active", cwd="/home/dev/blog")
    for n in range(5):  # an empty project is no project
        add_lesson(store, f"general rule {n}", "correction", status="active", cwd="")
    seen: list = []
    real = prime.candidates
    monkeypatch.setattr(prime, "candidates", lambda *a, **k: seen.append(k.get("cwd")) or real(*a, **k))
    goals._prime_latency_ms(store)
    assert seen and set(seen) == {"/home/dev/shop"}



def _corrections(store, kind: str, days: dict[str, bool]) -> None:
    """One episode of `kind` per day ("2026-05-01": repeated?); the repeated ones are sources of
    a lesson born on the first day, before them."""
    from remem.engine.lessons import add_lesson

    store.put_episodes([{"id": f"{kind}-{day}", "kind": kind, "session_id": f"s-{day}", "title": "no, not like that",
                         "at": f"{day}T10:00:00+00:00"} for day in days])
    first = min(days)
    add_lesson(store, "Do it the other way", kind, created=f"{first}T12:00:00+00:00",
               sources=[f"{kind}-{first}"] + [f"{kind}-{day}" for day, repeated in days.items() if repeated])


def _goals(store, at: str, days: int = 30) -> dict:
    from remem.engine import clock, goals

    with clock.frozen(at):
        return {g["id"]: g for g in goals.check(store, days)}


@pytest.mark.parametrize("kind, gid", [("correction", "G1"), ("error", "G2")])
def test_g1_g2_split_the_calendar_window_not_the_days_that_had_any(store, kind, gid):
    """Earlier half of the 30 days: 1 repeat in 3; later half: 0 in 1. Splitting the list of
    days instead (05-01, 05-02 | 05-03, 05-28) read 0 then 0.5: a fail."""
    _corrections(store, kind, {"2026-05-01": False, "2026-05-02": False, "2026-05-03": True, "2026-05-28": False})
    goal = _goals(store, "2026-05-30T08:00:00+00:00")[gid]
    assert goal["number"] == 0.0 and goal["status"] == "pass"


@pytest.mark.parametrize("kind, gid", [("correction", "G1"), ("error", "G2")])
def test_g1_g2_a_half_of_the_window_without_data_is_unknown(store, kind, gid):
    _corrections(store, kind, {"2026-05-20": False, "2026-05-22": True, "2026-05-25": True, "2026-05-28": False})
    goal = _goals(store, "2026-05-30T08:00:00+00:00")[gid]
    assert goal["number"] is None and goal["status"] == "unknown"


def test_g7_is_unknown_on_an_empty_memory(store):
    """No active lesson: the timing measures nothing, so it is no pass."""
    from remem.engine.lessons import add_lesson

    add_lesson(store, "vetoed rule", "correction", status="vetoed")
    goal = _goals(store, "2026-05-30T08:00:00+00:00")["G7"]
    assert goal["number"] is None and goal["status"] == "unknown"


def test_g9_counts_only_a_full_sleep_not_a_single_pass(store):
    from remem.engine import clock
    from remem.engine.sleep import run_sleep_collect

    with clock.frozen("2026-05-01T23:00:00+00:00"):
        run_sleep_collect(store, ["render"])
    assert _goals(store, "2026-05-02T08:00:00+00:00")["G9"]["status"] == "unknown"
    with clock.frozen("2026-05-02T23:00:00+00:00"):
        run_sleep_collect(store)
    g9 = _goals(store, "2026-05-03T08:00:00+00:00")["G9"]
    assert g9["status"] == "pass" and g9["number"] == round(9 / 24, 2)
    with clock.frozen("2026-05-05T23:00:00+00:00"):  # a render alone does not make sleep nightly
        run_sleep_collect(store, ["render"])
    g9 = _goals(store, "2026-05-06T08:00:00+00:00")["G9"]
    assert g9["status"] == "fail" and g9["number"] == round(3 + 9 / 24, 2)


def fake_openai_compatible_model_saying(answer: str, verdict: str) -> Starlette:
    """A local model stand-in that answers every situation with `answer` and judges with `verdict`."""

    async def chat(request: Request) -> JSONResponse:
        body = json.loads(await request.body())
        prompt = body["messages"][-1]["content"]
        said = verdict if prompt.startswith(("Rule:", "Response:")) else answer
        return JSONResponse({"choices": [{"message": {"role": "assistant", "content": said}}]})

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


@pytest.mark.parametrize("verdict, expected", [
    ("**Yes**", True), ("Yes, it does.", True), ("no.", False), ("_No_", False),
    ("Not sure.", None), ("None of the above", None), ("Nope", None), ("", None), ("Maybe yes", None),
])
def test_the_judges_first_word_decides_and_anything_else_is_not_counted(verdict, expected):
    from remem.engine import experiment

    assert experiment.verdict_of(verdict) is expected


def test_experiment_with_fake_openai_compatible_server_unsure_judge_is_not_counted(store, home):
    from remem import config
    from remem.engine import experiment

    _lesson(store)
    with ServerThread(fake_openai_compatible_model_saying("I will run pip install.", "Not sure.")) as server:
        home.mkdir(parents=True, exist_ok=True)
        config.set_value("llm.url", server.url)
        result = experiment.run(store)
    assert result["behaviour_without_reminder"]["judged"] == 0  # not a "no"
    assert result["boundary_asks_first"]["judged"] == 0


def test_experiment_with_fake_openai_compatible_server_keeps_a_huge_answer_shortened(store, home):
    from remem import config
    from remem.engine import experiment

    _lesson(store)
    with ServerThread(fake_openai_compatible_model_saying("word " * 200_000, "yes")) as server:
        home.mkdir(parents=True, exist_ok=True)
        config.set_value("llm.url", server.url)
        result = experiment.run(store)
    assert result["behaviour_with_reminder"] == {"passed": 1, "judged": 1, "rate": 1.0}
    sizes = [len(r["response"]) for r in store.rows("SELECT response FROM experiments")]
    assert len(sizes) == 3 and max(sizes) <= experiment.MAX_ANSWER


def test_experiment_says_on_stderr_when_the_model_never_answers(cli, store, home):
    """No model is faked here: the configured port has nothing listening."""
    from remem import config
    from remem.engine import llm

    _lesson(store)
    home.mkdir(parents=True, exist_ok=True)
    url = "http://127.0.0.1:9/v1"
    config.set_value("llm.url", url)
    config.set_value("llm.timeout_s", 2)
    try:
        out = cli("experiment")
        assert out.exit_code == 1, out.output  # nothing was judged
        err = out.stderr.strip()
        assert err.startswith(f"remem: the model at {url} gave no answer 3 times, so nothing was judged (see "), err
        assert err.endswith("remem.log)") and err.count("\n") == 0
        as_json = cli("experiment", "--json")
        assert json.loads(as_json.stdout)["no_answer"] == 3 and "gave no answer 3 times" in as_json.stderr
    finally:
        llm._away_until.pop(url, None)
