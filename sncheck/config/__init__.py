"""Configuration: inventory, playbook, fault plan, YAML/JSON loading with bounds, units, host lists, shipped files."""
