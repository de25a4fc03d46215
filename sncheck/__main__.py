"""``python -m sncheck``: the same CLI as the ``sncheck`` console script."""

from sncheck.cli.start import main

main()
