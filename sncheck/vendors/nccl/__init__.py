"""What the NCCL library (and PyTorch's ProcessGroupNCCL over it) prints while a job runs:
``NCCL_DEBUG`` logs (:mod:`.debug_log`) and the watchdog's and Flight Recorder's messages
(:mod:`.watchdog`). The Inspector plug-in's JSON is read by :mod:`sncheck.vendors.nccl_inspector`
(shared with ``sncheck watch``), the RAS client's status by :mod:`sncheck.vendors.nccl_ras` (shared with it too)."""
