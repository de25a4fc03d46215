"""sncheck: validation harness for AI supernode clusters."""

__version__ = "0.1.0"
