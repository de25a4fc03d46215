"""Data shipped inside the sncheck wheel (see pyproject.toml package-dir)."""
