"""Legacy (v0.1) Lance data files: the format pylance wrote by default before 0.17 and still
writes for ``data_storage_version="legacy"``. :class:`LegacyFileReader` reads them behind the
interface of :class:`~lancefmt.file.LanceFileReader` (which hands one out for a legacy file),
:class:`LegacyFileWriter` writes them behind that of :class:`~lancefmt.file.LanceFileWriter`."""
