"""The Dagster code location (assets, checks, jobs, resources) and the `plbench` CLI."""
