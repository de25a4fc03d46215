"""Where results live: the run directory (rows as they arrive, results atomically), the state store (SQLite), history and evidence."""
