"""Check that a release of remem would work for a new user, mechanically.

Builds the sdist and wheel, installs the wheel into a fresh virtual environment (package
index only), and checks: `remem --version`, `remem demo` offline, the bundled model inside the
wheel, no test dependency pulled in, and the version equal to the newest CHANGELOG entry.

    python scripts/release_check.py [--keep] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL_FILES = ("model.safetensors", "tokenizer.json", "config.json")
TEST_TOOLS = {"pytest", "hypothesis", "pytest-textual-snapshot", "pytest-xdist", "openai", "anthropic"}


def run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]


def check(results: list[dict[str, object]], name: str, ok: bool, detail: str = "") -> bool:
    results.append({"check": name, "ok": bool(ok), "detail": detail})
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", action="store_true", help="Keep the temporary folder.")
    parser.add_argument("--json", action="store_true", help="Print JSON.")
    args = parser.parse_args()

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    version = project["version"]
    test_deps = {re.split(r"[<>=!~\[ ]", d, maxsplit=1)[0].lower() for d in project["optional-dependencies"]["test"]}
    results: list[dict[str, object]] = []
    work = Path(tempfile.mkdtemp(prefix="remem-release-"))
    try:
        changelog = (ROOT / "CHANGELOG.md").read_text()
        released = re.findall(r"^## \[(\d+\.\d+\.\d+[^\]]*)\]", changelog, flags=re.M)
        check(results, "version matches newest CHANGELOG entry", bool(released) and released[0] == version,
              f"pyproject {version}, CHANGELOG {released[0] if released else 'none'}")

        dist = work / "dist"
        built = run([sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)])
        if not check(results, "sdist and wheel build", built.returncode == 0, built.stderr[-400:]):
            return report(results, args.json)
        wheels = list(dist.glob("*.whl"))
        sdists = list(dist.glob("*.tar.gz"))
        check(results, "one wheel and one sdist", len(wheels) == 1 and len(sdists) == 1,
              ", ".join(p.name for p in dist.iterdir()))
        names = zipfile.ZipFile(wheels[0]).namelist()
        missing = [f for f in MODEL_FILES if f"remem/engine/model/{f}" not in names]
        check(results, "bundled model inside the wheel", not missing, f"missing: {missing}" if missing else "")

        venv = work / "venv"
        run([sys.executable, "-m", "venv", str(venv)]).check_returncode()
        py = venv / "bin" / "python"
        installed = run([str(py), "-m", "pip", "install", "--quiet", str(wheels[0])])
        if not check(results, "wheel installs into a fresh environment", installed.returncode == 0,
                     installed.stderr[-400:]):
            return report(results, args.json)
        # Some test deps (anyio) are also runtime deps of mcp; the test-only tools must be absent,
        # and the wheel's own requirements must name no test dependency outside the extra.
        listed = run([str(py), "-m", "pip", "list", "--format", "json"])
        present = {p["name"].lower() for p in json.loads(listed.stdout)}
        meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
        requires = [line.split(":", 1)[1].strip() for line in zipfile.ZipFile(wheels[0]).read(meta).decode().splitlines()
                    if line.startswith("Requires-Dist:") and "extra ==" not in line]
        direct = {re.split(r"[<>=!~\[ ;(]", r, maxsplit=1)[0].lower() for r in requires}
        leaked = sorted((test_deps & direct) | (TEST_TOOLS & present))
        check(results, "no test dependency pulled in", not leaked, ", ".join(leaked))

        exe = venv / "bin" / "remem"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("REMEM_", "CLAUDE_", "CODEX_"))}
        env.update(HOME=str(work / "home"), HF_HUB_OFFLINE="1", NO_PROXY="*",
                   http_proxy="http://127.0.0.1:9", https_proxy="http://127.0.0.1:9")
        (work / "home").mkdir()
        out = run([str(exe), "--version"], env=env)
        check(results, "remem --version", out.returncode == 0 and out.stdout.strip() == f"remem {version}",
              out.stdout.strip() or out.stderr[-200:])
        demo = run([str(exe), "demo"], env=env, cwd=str(work))
        check(results, "remem demo offline", demo.returncode == 0 and (work / "home" / ".remem-demo" / "memory.db").exists(),
              (demo.stdout + demo.stderr)[-400:])
        return report(results, args.json)
    finally:
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


def report(results: list[dict[str, object]], as_json: bool) -> int:
    failed = [r for r in results if not r["ok"]]
    if as_json:
        print(json.dumps({"ok": not failed, "checks": results}, indent=2))
    else:
        for r in results:
            mark = "ok  " if r["ok"] else "FAIL"
            detail = f"  ({r['detail']})" if r["detail"] and not r["ok"] else ""
            print(f"{mark} {r['check']}{detail}")
        print(f"release check: {len(results) - len(failed)} of {len(results)} checks ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
