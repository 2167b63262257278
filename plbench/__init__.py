"""plbench: build executable PL/SQL benchmarks from public raw sources.

The library is free of Dagster; the asset graph in `pipelines/` calls into it.
"""

__version__ = "0.1.0"
