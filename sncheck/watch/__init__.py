"""In-job signals: what a running job writes about its own collectives, judged by sncheck.

* :mod:`sncheck.watch.torch`: the job-side helper (Flight Recorder on, the rank map,
  dumps every N steps or on a signal). Imports nothing of sncheck and nothing beyond
  the standard library and torch, so a training image needs only torch.
* :mod:`sncheck.watch.dumps`: reads a directory of dumps (Flight Recorder JSON and
  pickles, NCCL RAS text and JSON, NCCL Inspector JSON, nccl-tests JSON) into rows.
* the NCCL RAS status parser is a vendor view (:mod:`sncheck.vendors.nccl_ras`, ``sncheck parse nccl-ras``).
* :mod:`sncheck.watch.rankmap`: rank -> card.
* :mod:`sncheck.watch.judge`: rows -> rules -> findings -> results.json, reports and
  the state store; the follow loop.

The detections are rules in the rules file (layer ``watch``): metrics and ops in
:mod:`sncheck.health.injob`.
"""
