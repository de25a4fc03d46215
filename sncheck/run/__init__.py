"""The run: execute the layers, retest, decide, act and record."""
