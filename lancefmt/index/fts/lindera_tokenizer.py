"""The ``lindera/<model>`` base tokenizer (Japanese and Korean morphological analysis): not
implemented by lancefmt.

pylance loads ``$LANCE_LANGUAGE_MODEL_HOME/lindera/<model>/config.yml`` (or the config that
``LINDERA_CONFIG_PATH`` names) into a Lindera segmenter. lancefmt has no Lindera segmenter, so
every model fails to load, as a model pylance cannot load does: a missing directory is invalid
input (ValueError), anything else an OSError naming the config. (pylance 14 itself fails to
load every model of Lance's own test suite, whose configs are in an older Lindera layout.)
"""
from __future__ import annotations

import os

from .jieba_tokenizer import LanguageModelError, model_dir

CONFIG_FILE = "config.yml"


def is_lindera(base_tokenizer: str) -> bool:
    return base_tokenizer.startswith("lindera/")


def load(base_tokenizer: str):
    """Refuse the model (see module docstring), naming the config pylance would read."""
    root = model_dir(base_tokenizer)
    config = root / CONFIG_FILE
    if config.exists():
        raise LanguageModelError(f"Failed to load tokenizer config at {config}: lancefmt has no "
                                 f"Lindera segmenter")
    env = os.environ.get("LINDERA_CONFIG_PATH")
    raise LanguageModelError(f"Failed to initialize default tokenizer ({CONFIG_FILE} not in {root}"
                             f"{', LINDERA_CONFIG_PATH=' + env if env else ''}): lancefmt has no "
                             f"Lindera segmenter")
