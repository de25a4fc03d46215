"""Code that runs on the hosts: the torch probe and the golden model.

CUDA numbers devices fastest-first unless told otherwise; sncheck's card ``gpuN`` is
nvidia-smi's index N (PCI bus order), in host facts, findings and the isolation
actions alike, so the probe's ``cuda:N`` must be that card too. Set before any CUDA
call (CUDA reads it once, at initialisation); a value the job's environment sets wins.
"""

import os

os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
