"""docs/CLI.md and docs/CONFIG.md name every command, option, setting and environment variable
remem has, and nothing it does not have: a new option or key without its line fails here."""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
CLI_DOC = ROOT / "docs" / "CLI.md"
CONFIG_DOC = ROOT / "docs" / "CONFIG.md"

# "### `remem share receive`": a command's own section, up to the next heading.
COMMAND_HEADING = re.compile(r"^#{2,4} `(remem(?: [a-z][a-z-]*)*)`", re.MULTILINE)
ANY_HEADING = re.compile(r"^#", re.MULTILINE)
CODE_BLOCK = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
# "| `recall.k` | `5` | …": a key's row in CONFIG.md, with its default as TOML.
KEY_ROW = re.compile(r"^\| `([a-z_0-9]+\.[a-z_0-9]+)` \| `([^`]*)` \|", re.MULTILINE)
ENV_NAME = re.compile(r"`([A-Z][A-Z0-9_]{2,})`")


def walk_commands(cmd: Any, path: str = "remem") -> Iterator[tuple[str, Any]]:
    yield path, cmd
    for name, sub in (getattr(cmd, "commands", None) or {}).items():
        yield from walk_commands(sub, f"{path} {name}")


def all_commands() -> dict[str, Any]:
    import typer

    import remem.cli

    return dict(walk_commands(typer.main.get_command(remem.cli.app)))


def option_names(cmd: Any) -> list[str]:
    """Each option's long names (`--lessons`, `--no-lessons`), or its short one when it has no
    long one (`-k`)."""
    names: list[str] = []
    for param in cmd.params:
        if param.param_type_name != "option":
            continue
        every = [*param.opts, *param.secondary_opts]
        names += [n for n in every if n.startswith("--")] or every
    return names


def doc_sections(text: str) -> dict[str, str]:
    """Command path -> the text of its section in CLI.md, examples left out: an option used in
    an example but described nowhere is not documented."""
    text = CODE_BLOCK.sub("", text)  # also keeps a `# comment` in an example from ending a section
    sections: dict[str, str] = {}
    for match in COMMAND_HEADING.finditer(text):
        following = ANY_HEADING.search(text, match.end())
        sections[match.group(1)] = text[match.end():following.start() if following else len(text)]
    return sections


def names_option(section: str, option: str) -> bool:
    # Whole word: `-k` is not found inside `--kind`, nor `--lessons` inside `--no-lessons`.
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", section) is not None


def config_keys() -> dict[str, Any]:
    from remem.config import DEFAULTS

    return {f"{section}.{key}": value for section, keys in DEFAULTS.items() for key, value in keys.items()}


def env_readers(tree: ast.AST) -> set[str]:
    """Functions that read the environment variable named by their first parameter
    (`paths._env_path("CODEX_HOME", …)`)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.args.args:
            first = node.args.args[0].arg
            for inner in ast.walk(node):
                arg = _reads(inner)
                if isinstance(arg, ast.Name) and arg.id == first:
                    found.add(node.name)
    return found


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or \
        (isinstance(node, ast.Name) and node.id == "environ")


def _reads(node: ast.AST) -> ast.AST | None:
    """The argument of `os.environ.get(X)`, `os.getenv(X)` or `os.environ[X]` (read), else None."""
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "get" and _is_environ(func.value):
            return node.args[0]
        if (isinstance(func, ast.Attribute) and func.attr == "getenv") or \
                (isinstance(func, ast.Name) and func.id == "getenv"):
            return node.args[0]
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _is_environ(node.value):
        return node.slice
    return None


def read_name(node: ast.AST, constants: dict[str, str], readers: set[str]) -> str | None:
    """The variable name `node` reads from the environment, if it reads a known one."""
    arg = _reads(node)
    if arg is None and isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Name) \
            and node.func.id in readers:
        arg = node.args[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.Name):  # MODULES_ENV = "REMEM_HOOK_MODULES_OUT"
        return constants.get(arg.id)
    return None


def variables_read(files: list[Path]) -> set[str]:
    names: set[str] = set()
    for file in files:
        tree = ast.parse(file.read_text(encoding="utf-8"))
        constants = {node.targets[0].id: node.value.value for node in tree.body  # type: ignore[attr-defined]
                     if isinstance(node, ast.Assign) and len(node.targets) == 1
                     and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Constant)
                     and isinstance(node.value.value, str)}
        readers = env_readers(tree)
        names |= {name for node in ast.walk(tree) if (name := read_name(node, constants, readers))}
    return names


def variables_remem_reads() -> set[str]:
    return variables_read(sorted((ROOT / "remem").rglob("*.py")))


def config_doc_variables() -> set[str]:
    """The variables CONFIG.md's own section names (a variable only mentioned beside a key,
    such as REMEM_TOKEN at server.token, still needs its line there)."""
    text = CONFIG_DOC.read_text(encoding="utf-8")
    return set(ENV_NAME.findall(text.split("\n## Environment variables\n", 1)[1]))


# ----------------------------------------------------------------------------- CLI.md


def test_every_command_has_its_own_section_in_the_cli_doc() -> None:
    missing = set(all_commands()) - set(doc_sections(CLI_DOC.read_text(encoding="utf-8")))
    assert not missing, f"docs/CLI.md has no `### \\`COMMAND\\`` section for {sorted(missing)}"


def test_the_cli_doc_has_no_section_for_a_command_remem_lacks() -> None:
    extra = set(doc_sections(CLI_DOC.read_text(encoding="utf-8"))) - set(all_commands())
    assert not extra, f"docs/CLI.md documents commands remem does not have: {sorted(extra)}"


def test_every_option_is_named_in_its_commands_section() -> None:
    sections = doc_sections(CLI_DOC.read_text(encoding="utf-8"))
    missing = [f"{path} {option}" for path, cmd in all_commands().items()
               for option in option_names(cmd) if not names_option(sections.get(path, ""), option)]
    assert not missing, f"docs/CLI.md does not name these options in their command's section: {missing}"


def test_the_option_walk_sees_options_of_nested_commands() -> None:
    # Guards the walk itself: were it to stop at the top level, the test above would pass empty.
    commands = all_commands()
    assert "--note" in option_names(commands["remem lessons veto"])
    assert "--folder" in option_names(commands["remem share receive"])
    assert {"--lessons", "--no-lessons", "-k"} <= set(option_names(commands["remem recall"]))
    assert {"--home", "--version"} <= set(option_names(commands["remem"]))


# ----------------------------------------------------------------------------- CONFIG.md


def test_every_config_key_has_a_row_with_its_real_default() -> None:
    rows = dict(KEY_ROW.findall(CONFIG_DOC.read_text(encoding="utf-8")))
    missing = sorted(set(config_keys()) - set(rows))
    assert not missing, f"docs/CONFIG.md has no row for {missing}"
    wrong = []
    for key, default in config_keys().items():
        shown = tomllib.loads(f"v = {rows[key]}")["v"]
        if shown != default or isinstance(shown, bool) != isinstance(default, bool):
            wrong.append(f"{key}: docs say {rows[key]}, the default is {default!r}")
    assert not wrong, wrong


def test_the_config_doc_has_no_row_for_a_key_remem_lacks() -> None:
    rows = dict(KEY_ROW.findall(CONFIG_DOC.read_text(encoding="utf-8")))
    extra = sorted(set(rows) - set(config_keys()))
    assert not extra, f"docs/CONFIG.md names keys remem does not have: {extra}"


def test_every_variable_the_config_doc_names_is_read_by_remem() -> None:
    named = set(ENV_NAME.findall(CONFIG_DOC.read_text(encoding="utf-8")))
    invented = sorted(named - variables_remem_reads())
    assert not invented, f"docs/CONFIG.md names variables remem never reads: {invented}"


def test_every_variable_remem_reads_has_its_line_in_the_config_doc() -> None:
    undocumented = sorted(variables_remem_reads() - config_doc_variables())
    assert not undocumented, f"remem reads {undocumented}, not in docs/CONFIG.md's environment variables"


@pytest.mark.parametrize("source, expected", [
    ('import os\nv = os.environ.get("A_VAR")', {"A_VAR"}),
    ('import os\nv = os.getenv("A_VAR", "x")', {"A_VAR"}),
    ('import os\nv = os.environ["A_VAR"]', {"A_VAR"}),
    ('import os\nNAME = "A_VAR"\nv = os.environ.get(NAME)', {"A_VAR"}),
    ('import os\ndef _env(var, d):\n    return os.environ.get(var) or d\nv = _env("A_VAR", 1)', {"A_VAR"}),
    ('import os\nos.environ["A_VAR"] = "1"\nos.environ.setdefault("B_VAR", "1")', set()),
])
def test_the_variable_scan_finds_reads_and_not_writes(tmp_path: Path, source: str,
                                                       expected: set[str]) -> None:
    file = tmp_path / "m.py"
    file.write_text(source, encoding="utf-8")
    assert variables_read([file]) == expected


# ----------------------------------------------------------------------------- remem paths


def test_remem_paths_names_every_variable_that_moves_a_location(cli: Any) -> None:
    result = cli("paths")
    assert result.exit_code == 0, result.output
    unnamed = sorted(name for name in variables_read([ROOT / "remem" / "paths.py"])
                     if not re.search(rf"\b{name}\b", result.output))
    assert not unnamed, f"`remem paths` does not name {unnamed}, which move the paths it lists"
