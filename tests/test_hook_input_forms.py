"""How the agent's payload may be spelled: a byte order mark before the JSON (UTF-8, or UTF-16
as Windows PowerShell pipes it), and a cwd that is not written the way folders are stored
("/a/b/..", "/a/./b", "//a/b"). Real hook processes, the real bundled model, a real store."""

from __future__ import annotations

import json
import os
import posixpath
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import ROOT
from tests.test_hooks import seed, session_in_arm

SHOP = "/home/you/code/shop-api"
LESSON = ("We use uv here, not pip: uv pip install, never pip install", "correction", SHOP)


@pytest.fixture
def shop(store, monkeypatch):
    from remem import config

    seed(store, [LESSON])
    config.set_value("prime.timeout_ms", 30000)  # a loaded test machine: shown, not given up on
    monkeypatch.setenv(config.HOOK_CAP_ENV, "60000")  # nor cut to what the agents wait
    return store


def _hook(raw: bytes) -> subprocess.CompletedProcess[bytes]:
    """`remem hook prompt` with exactly these bytes on stdin, previewing (nothing recorded)."""
    return subprocess.run([sys.executable, "-m", "remem", "hook", "prompt"], input=raw,
                          capture_output=True, env=dict(os.environ, REMEM_HOOK_PREVIEW="1"),
                          cwd=str(ROOT), timeout=120)


def _prompt(cwd: str) -> dict:
    return {"prompt": "pip install fakeredis", "session_id": session_in_arm(False, "forms"), "cwd": cwd}


# ------------------------------------------------------------------------------ byte order marks

ENCODED = {
    "utf-8 with BOM": lambda text: b"\xef\xbb\xbf" + text.encode("utf-8"),
    "utf-16 LE with BOM": lambda text: b"\xff\xfe" + text.encode("utf-16-le"),
    "utf-16 BE with BOM": lambda text: b"\xfe\xff" + text.encode("utf-16-be"),
}


@pytest.mark.parametrize("form", list(ENCODED))
def test_a_payload_behind_a_byte_order_mark_gets_its_lesson(shop, form):
    res = _hook(ENCODED[form](json.dumps(_prompt(SHOP)) + "\n"))
    assert res.returncode == 0 and b"not JSON" not in res.stderr, res.stderr
    assert b"We use uv here" in res.stdout, res.stderr


_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=st.dictionaries(st.text(), _values, max_size=5), form=st.sampled_from(list(ENCODED) + ["utf-8"]),
       ascii_only=st.booleans())
def test_any_payload_reads_the_same_with_or_without_a_byte_order_mark(payload, form, ascii_only):
    from remem.hooks import _complete, _payload

    text = json.dumps(payload, ensure_ascii=ascii_only)
    if any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        return  # a lone surrogate has no UTF-8 or UTF-16 bytes to send
    raw = text.encode("utf-8") if form == "utf-8" else ENCODED[form](text)
    assert _payload(raw) == payload
    assert _complete(raw)


def test_a_byte_order_mark_alone_is_an_empty_input():
    from remem.hooks import _payload

    for raw in (b"\xef\xbb\xbf", b"\xef\xbb\xbf \n", b"\xff\xfe", b"\xff\xfe \x00\n\x00"):
        with pytest.raises(ValueError, match="empty hook input"):
            _payload(raw)


# ------------------------------------------------------------------------------ cwd spellings

@pytest.mark.parametrize("cwd, shown", [
    (SHOP, True),
    (SHOP + "/", True),
    ("//home/you/code/shop-api", True),
    ("/home/you/code/./shop-api", True),
    ("/home/you/code/shop-api/src/../tests", True),
    (SHOP + "/..", False),  # /home/you/code: not the project
    (SHOP + "/../other", False),  # another project
    ("/home/you/code/shop-api-v2/../other", False),
])
def test_the_payload_cwd_is_matched_as_the_folder_it_names(shop, cwd, shown):
    res = _hook(json.dumps(_prompt(cwd)).encode())
    assert res.returncode == 0, res.stderr
    assert (b"We use uv here" in res.stdout) is shown, (cwd, res.stdout, res.stderr)


_part = st.sampled_from(["a", "b", "shop-api", ".", "..", "", "x.y"])


@settings(max_examples=300)
@given(parts=st.lists(_part, min_size=1, max_size=8), slashes=st.integers(1, 3), trailing=st.booleans())
def test_the_cwd_a_hook_reads_is_the_normal_spelling_of_that_folder(parts, slashes, trailing):
    from remem.engine.projects import is_under
    from remem.hooks.adapters import read

    raw = "/" * slashes + "/".join(parts) + ("/" if trailing else "")
    call = read("claude-code", "prompt", {"prompt": "hello", "session_id": "s", "cwd": raw})
    expected = posixpath.normpath("/" + "/".join(parts).lstrip("/"))  # the folder the path names
    assert call.cwd == expected
    assert call.cwd == "/" or not call.cwd.endswith("/")
    assert "/./" not in call.cwd + "/" and "/../" not in call.cwd + "/" and "//" not in call.cwd
    # a project folder and its lessons apply where the path really leads, nowhere else
    assert is_under(call.cwd, "/a") == (expected == "/a" or expected.startswith("/a/"))


def test_a_folder_with_two_leading_slashes_is_stored_as_the_hook_reads_it():
    """"//a/b" is "/a/b" where folders are stored (ingest, remember) as where hooks read them:
    one rule, projects.normal_folder, so a lesson learned there is found there."""
    from remem.engine.projects import normal_folder

    assert normal_folder("//home/you/code/shop-api/") == "/home/you/code/shop-api"
    assert normal_folder("///a//b/..") == "/a" and normal_folder("//") == "/"
