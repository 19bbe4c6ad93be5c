"""CLI command groups. Each module has register(app) and imports engine modules lazily."""
