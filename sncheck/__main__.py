"""``python -m sncheck``: the same CLI as the ``sncheck`` console script."""

from .cli import main

main()
