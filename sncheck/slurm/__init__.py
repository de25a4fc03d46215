"""Slurm: reading a cluster (scontrol, sinfo) and the node health check (node-check)."""
