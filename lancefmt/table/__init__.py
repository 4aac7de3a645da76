"""The Lance TABLE format."""
