"""Spider 1.0 and Spider 2.0-Lite: gold-query equivalence and Spider-PLSQL tasks."""
