"""The asset graph, one module per stage; each asset loads inputs, calls the library, attaches metadata."""
