"""Protobuf modules generated at build time from ``protos/*.proto`` (never edited by hand)."""
