"""Every location remem reads or writes, each overridable by an environment variable.

Functions, not constants: tests and `--home` change the environment after import.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def _env_path(var: str, default: Path) -> Path:
    # Absolute: a relative REMEM_HOME written into an agent's config would give every project
    # the agent opens a memory of its own.
    # A blank value is no folder (it would be one named "  " in the current folder): the
    # default, as for an empty one.
    value = os.environ.get(var)
    return Path(os.path.abspath(Path(value).expanduser())) if value and value.strip() else default


def empty_home_problem() -> str | None:
    """The one line refusing a REMEM_HOME set but empty (`REMEM_HOME= remem …`, or a variable
    that was never set, as in REMEM_HOME=$TYPO), or None. home() itself falls back to ~/.remem
    then: the hooks, which must never refuse, keep the default; the CLI asks this first and
    stops, as for `--home ''`, rather than answer from a memory that was not the one meant."""
    value = os.environ.get("REMEM_HOME")
    if value is None or value.strip():
        return None
    return ("REMEM_HOME is set but empty; name a folder (export REMEM_HOME=~/.remem-work), or "
            "unset it for ~/.remem (unset REMEM_HOME)")


def user_home() -> Path:
    return Path(os.environ.get("HOME") or Path.home()).expanduser()


def home() -> Path:
    """remem's home: the database, config, logs, identity, inbox and reports."""
    return _env_path("REMEM_HOME", user_home() / ".remem")


def db_path() -> Path:
    return home() / "memory.db"


def config_path() -> Path:
    return home() / "config.toml"


def logs_dir() -> Path:
    return home() / "logs"


def log_file() -> Path:
    return logs_dir() / "remem.log"


def identity_dir() -> Path:
    return home() / "identity"


def inbox_dir() -> Path:
    return home() / "inbox"


def morning_path() -> Path:
    return home() / "morning.md"


def lessons_jsonl_path() -> Path:
    return home() / "lessons.jsonl"


def backups_dir() -> Path:
    return home() / "backups"


def vectors_dir() -> Path:
    """Derived, rebuildable caches (memory-mapped vectors). Safe to delete."""
    return home() / "cache"


def is_demo() -> bool:
    """Whether this memory is the demo (`remem demo`), which keeps agent homes of its own."""
    return (home() / ".remem-demo").is_file()


def _demo_agent_home(name: str) -> Path | None:
    """The demo memory (`remem demo`) keeps its own agent homes: browsing it, or running its
    sleep, never reads or writes the person's real ~/.claude or ~/.codex. It wins over
    CLAUDE_CONFIG_DIR and CODEX_HOME, which name the person's real ones."""
    return home() / name if os.environ.get("REMEM_HOME") and is_demo() else None


def claude_home() -> Path:
    return _demo_agent_home("claude") or _env_path("CLAUDE_CONFIG_DIR", user_home() / ".claude")


def claude_projects_dir() -> Path:
    return claude_home() / "projects"


def claude_settings() -> Path:
    return claude_home() / "settings.json"


def claude_user_config() -> Path:
    """Claude Code's user config with MCP servers (user scope): ~/.claude.json, or the one
    inside CLAUDE_CONFIG_DIR when that is set (Claude Code keeps it there then)."""
    demo = _demo_agent_home("claude")
    if demo:
        return demo / ".claude.json"
    value = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(value).expanduser() if value else user_home()) / ".claude.json"


def codex_home() -> Path:
    return _demo_agent_home("codex") or _env_path("CODEX_HOME", user_home() / ".codex")


def codex_config() -> Path:
    return codex_home() / "config.toml"


def codex_hooks() -> Path:
    return codex_home() / "hooks.json"


def cursor_mcp_config() -> Path:
    return cursor_dir() / "mcp.json"


def cursor_hooks() -> Path:
    return cursor_dir() / "hooks.json"


def systemd_user_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(user_home() / ".config")
    return Path(base).expanduser() / "systemd" / "user"


def setup_manifest() -> Path:
    """What `remem setup` added where, so `--remove` takes out exactly that."""
    return home() / "setup.json"


def gemini_settings() -> Path:
    return user_home() / ".gemini" / "settings.json"


def gemini_sessions_dir() -> Path:
    """Where Gemini CLI keeps each project's sessions: <this>/<project hash>/chats/session-*."""
    return (_demo_agent_home("gemini") or user_home() / ".gemini") / "tmp"


def cursor_dir() -> Path:
    return user_home() / ".cursor"


def windsurf_mcp_config() -> Path:
    return user_home() / ".codeium" / "windsurf" / "mcp_config.json"


def _app_config_home() -> Path:
    """Where Electron apps (Claude Desktop, VS Code) keep their settings on Linux:
    $XDG_CONFIG_HOME when it is set to an absolute path (the spec ignores a relative one),
    else ~/.config."""
    value = os.environ.get("XDG_CONFIG_HOME")
    return Path(value) if value and os.path.isabs(value) else user_home() / ".config"


def claude_desktop_config() -> Path:
    if sys.platform == "darwin":
        return user_home() / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    if sys.platform.startswith("win"):
        appdata = os.environ.get("APPDATA") or str(user_home() / "AppData" / "Roaming")
        return Path(appdata) / "Claude" / "claude_desktop_config.json"
    return _app_config_home() / "Claude" / "claude_desktop_config.json"


def vscode_mcp_config() -> Path:
    if sys.platform == "darwin":
        return user_home() / "Library" / "Application Support" / "Code" / "User" / "mcp.json"
    if sys.platform.startswith("win"):
        appdata = os.environ.get("APPDATA") or str(user_home() / "AppData" / "Roaming")
        return Path(appdata) / "Code" / "User" / "mcp.json"
    return _app_config_home() / "Code" / "User" / "mcp.json"


def project_folder_name(cwd: str) -> str:
    """Claude Code's name for a project folder: every non-alphanumeric character becomes '-'.
    A trailing slash is no part of the folder ("/a/b/" is "/a/b", as Claude Code sees it)."""
    return "".join(c if c.isalnum() and c.isascii() else "-" for c in (cwd.rstrip("/") or cwd[:1]))


def all_paths() -> dict[str, Path]:
    """Every location, for `remem paths` and `remem doctor`."""
    return {
        "home": home(),
        "database": db_path(),
        "config": config_path(),
        "logs": logs_dir(),
        "identity": identity_dir(),
        "inbox": inbox_dir(),
        "morning": morning_path(),
        "lessons_jsonl": lessons_jsonl_path(),
        "backups": backups_dir(),
        "cache": vectors_dir(),
        "claude_home": claude_home(),
        "claude_projects": claude_projects_dir(),
        "claude_settings": claude_settings(),
        "claude_user_config": claude_user_config(),
        "codex_home": codex_home(),
        "codex_config": codex_config(),
        "codex_hooks": codex_hooks(),
        "cursor_mcp": cursor_mcp_config(),
        "cursor_hooks": cursor_hooks(),
        "setup_manifest": setup_manifest(),
        "systemd_user": systemd_user_dir(),
        "gemini_settings": gemini_settings(),
        "gemini_sessions": gemini_sessions_dir(),
        "cursor": cursor_dir(),
        "windsurf_mcp": windsurf_mcp_config(),
        "claude_desktop": claude_desktop_config(),
        "vscode_mcp": vscode_mcp_config(),
    }
