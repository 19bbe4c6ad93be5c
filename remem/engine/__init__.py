"""remem's engine: all logic. Never imports typer, textual, rich, mcp or tomlkit."""
