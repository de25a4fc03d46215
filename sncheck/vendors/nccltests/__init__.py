"""nccl-tests and rccl-tests, the collective benchmarks NVIDIA and AMD share: their
binaries, the command line sncheck launches them with, their parser and the rows made
from a parsed log (:mod:`.tool`). A vendor plug-in names one as its ``collective``."""
