"""pylance's ``lance.progress``: callbacks told when a fragment starts and finishes being
written (``write_dataset(progress=...)``, ``write_fragments(progress=...)``).

``FileSystemFragmentWriteProgress`` leaves a ``fragment_<id>.json`` (the fragment's metadata)
and, while the fragment is being written, a ``fragment_<id>.in_progress`` marker under a
directory, so a crashed distributed writer's unfinished fragments can be found.
"""
from __future__ import annotations

import json
from abc import ABC, abstractmethod

__all__ = ["FragmentWriteProgress", "NoopFragmentWriteProgress",
           "FileSystemFragmentWriteProgress"]


class FragmentWriteProgress(ABC):
    """Override ``begin`` and ``complete``; each gets the fragment's ``FragmentMetadata``."""

    @abstractmethod
    def begin(self, fragment, **kwargs) -> None:
        """A fragment is about to be written."""

    @abstractmethod
    def complete(self, fragment, **kwargs) -> None:
        """A fragment's files are written."""


class NoopFragmentWriteProgress(FragmentWriteProgress):
    def begin(self, fragment, **kwargs) -> None:
        pass

    def complete(self, fragment, **kwargs) -> None:
        pass


class FileSystemFragmentWriteProgress(FragmentWriteProgress):
    """Progress as files under ``base_uri`` (any pyarrow filesystem URI)."""

    PROGRESS_EXT = ".in_progress"

    def __init__(self, base_uri: str, metadata: dict | None = None):
        from pyarrow.fs import FileSystem

        self._fs, self._base_path = FileSystem.from_uri(str(base_uri))
        self._metadata = dict(metadata or {})

    def _path(self, fragment, suffix: str) -> str:
        return f"{self._base_path.rstrip('/')}/fragment_{fragment.id}{suffix}"

    def begin(self, fragment, **kwargs) -> None:
        self._fs.create_dir(self._base_path, recursive=True)
        with self._fs.open_output_stream(self._path(fragment, self.PROGRESS_EXT)) as out:
            out.write(json.dumps({"fragment_id": fragment.id,
                                  "metadata": self._metadata}).encode())
        with self._fs.open_output_stream(self._path(fragment, ".json")) as out:
            out.write(json.dumps(fragment.to_json()).encode())

    def complete(self, fragment, **kwargs) -> None:
        self._fs.delete_file(self._path(fragment, self.PROGRESS_EXT))
