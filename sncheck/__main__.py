"""``python -m sncheck``: the same CLI as the ``sncheck`` console script."""

from sncheck.cli.main import main

main()
