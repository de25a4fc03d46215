"""Slurm: reading a cluster (scontrol, sinfo). The node health check (node-check) builds a
run: :mod:`sncheck.run.nodecheck`."""
