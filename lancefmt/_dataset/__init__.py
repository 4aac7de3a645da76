"""Where pylance keeps helpers importable as ``lance._dataset.*``."""
