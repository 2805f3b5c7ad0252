"""Studies: the side questions of the report, each behind one or two notebooks (ARCHITECTURE.md lists them)."""
