"""Preset search spaces (TOML files), read by iotune.space.load()."""
