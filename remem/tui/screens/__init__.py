"""The panes of the UI (one per tab) and its modal screens."""
