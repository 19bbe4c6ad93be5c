"""remem: long-term memory for AI coding agents. Importing this package costs nothing."""

__version__ = "0.1.0"
