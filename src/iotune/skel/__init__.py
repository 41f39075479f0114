"""Skeletons: stand-alone benchmarks that reproduce an application's I/O (docs/skel.md)."""
