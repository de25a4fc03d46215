"""The command line: Click only, one module per command group; shared options and one error -> exit-code mapping live in main."""
