"""The ``lancefmt`` command.

``lancefmt inspect URI [--version N|TAG] [--json]`` shows one version's metadata (schema,
fragments, rows, storage version, feature flags, base paths, tags, naming scheme);
``lancefmt versions URI [--json]`` lists the versions. The multi-base and maintenance commands:

* ``bases URI`` lists the base paths; ``bases URI set ID|NAME PATH`` relocates one (a new
  version, nothing else rewritten); ``bases URI add PATH [--name N] [--dataset-root]``;
* ``verify URI`` opens every referenced file (exit status 1 and a list on a missing or broken
  file);
* ``clone SRC DST [--version V]`` makes a shallow clone;
* ``tags URI`` / ``tags URI create NAME [VERSION]`` / ``tags URI delete NAME``;
* ``branches URI`` / ``branches URI create NAME [--version V]`` / ``branches URI delete NAME``;
* ``cleanup URI [--older-than 14d] [--retain-versions N] [--dry-run] [--clone URI ...]
  [--owned-base NAME ...]``;
* ``prefixes URI`` lists the distinct storage prefixes a version touches (what credential
  vending has to cover);
* ``compact URI [--target-rows-per-fragment N] [--no-materialize-deletions]
  [--materialize-deletions-threshold F]`` rewrites small / deletion-heavy fragments.

Every command takes ``--json``; long operations show progress bars on a terminal
(``--progress`` / ``--no-progress`` to force).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import timedelta

from .errors import LanceError
from .io import normalize_uri, open_store
from .table import feature_flags as ff
from .table.manifest_stores import as_manifest_store
from .table.refs import list_branches, list_tags, resolve_version_ref
from .table.versions import latest_manifest, list_versions, locate_manifest
from .table.manifest import read_manifest


def _version_arg(text: str | None):
    if text is None:
        return None
    return int(text) if text.isdigit() else text


def _storage_options(pairs) -> dict | None:
    if not pairs:
        return None
    out = {}
    for p in pairs:
        key, sep, value = p.partition("=")
        if not sep:
            raise SystemExit(f"--storage-option expects KEY=VALUE, got {p!r}")
        out[key] = value
    return out


def _field_tree(fields) -> list[dict]:
    """The Lance field list (pre-order, parent ids) as nested dicts."""
    nodes = {}
    roots = []
    for f in fields:
        node = {"name": f.name, "id": f.id, "logical_type": f.logical_type,
                "nullable": f.nullable, "children": []}
        if f.metadata:
            node["metadata"] = {k: v.decode("utf-8", "replace") for k, v in f.metadata.items()}
        nodes[f.id] = node
        parent = nodes.get(f.parent_id)
        (parent["children"] if f.parent_id >= 0 and parent is not None else roots).append(node)
    return roots


def describe(uri: str, version=None, storage_options: dict | None = None,
             manifest_store=None) -> dict:
    """Everything ``inspect`` shows, as plain data (also the ``--json`` output)."""
    uri = normalize_uri(uri)
    store = open_store(uri, storage_options, as_manifest_store(manifest_store))
    ds_uri, v = resolve_version_ref(uri, version, store=store)
    loc = latest_manifest(ds_uri, store=store) if v is None else locate_manifest(ds_uri, v, store=store)
    m = read_manifest(loc.uri, size=loc.size, store=store)
    h = m.header
    frags = m.fragments
    unsupported = {}
    try:
        m.check_readable()
    except LanceError as e:
        unsupported["read"] = e.reason if hasattr(e, "reason") else str(e)
    tags = list_tags(uri, store=store)
    indices = m.indices
    wv = h.writer_version
    writer = f"{wv.library} {wv.version}" + (f"-{wv.prerelease}" if wv.HasField("prerelease") else "")
    return {
        "uri": uri,
        "dataset_uri": ds_uri,
        "version": m.version,
        "manifest": loc.uri,
        "manifest_size": m.size,
        "naming_scheme": loc.scheme,
        "timestamp": m.timestamp.isoformat(sep=" "),
        "timestamp_ns": m.timestamp_ns,
        "branch": h.branch if h.HasField("branch") else None,
        "writer": writer,
        "data_storage_version": m.data_storage_version,
        "reader_feature_flags": {"value": m.reader_feature_flags,
                                 "names": ff.flag_names(m.reader_feature_flags)},
        "writer_feature_flags": {"value": m.writer_feature_flags,
                                 "names": ff.flag_names(m.writer_feature_flags)},
        "unsupported": unsupported,
        "schema": _field_tree(h.fields),
        "fragments": len(frags),
        "data_files": frags.num_files,
        "rows": {"physical": frags.total_physical_rows, "deleted": frags.total_deleted_rows,
                 "live": frags.total_live_rows},
        "deletion_files": frags.num_deletion_files,
        "max_fragment_id": h.max_fragment_id if h.HasField("max_fragment_id") else None,
        "next_row_id": h.next_row_id,
        "stable_row_ids": bool(m.reader_feature_flags & ff.FLAG_STABLE_ROW_IDS),
        "bases": [{"id": b.id, "name": b.name if b.HasField("name") else None, "path": b.path,
                   "is_dataset_root": b.is_dataset_root}
                  for b in sorted(h.base_paths, key=lambda b: b.id)],
        "indices": [{"name": i.name, "fields": list(i.fields), "dataset_version": i.dataset_version}
                    for i in indices],
        "tags": {name: {"version": t.version, "branch": t.branch} for name, t in tags.items()},
        "branches": {name: {"parent_branch": b.parent_branch, "parent_version": b.parent_version}
                     for name, b in list_branches(uri, store=store).items()},
        "config": dict(sorted(h.config.items())),
        "transaction_file": h.transaction_file or None,
    }


def _print_fields(nodes, depth, out):
    for n in nodes:
        null = "nullable" if n["nullable"] else "not null"
        out.append(f"{'  ' * depth}- {n['name']}: {n['logical_type']} ({null}, id {n['id']})")
        _print_fields(n["children"], depth + 1, out)


def render(info: dict) -> str:
    """The human-readable ``inspect`` report."""
    rows = info["rows"]
    out = [
        f"dataset        {info['dataset_uri']}",
        f"version        {info['version']}" + (f"  (branch {info['branch']})" if info["branch"] else ""),
        f"committed      {info['timestamp']}  by {info['writer']}",
        f"manifest       {info['manifest']}  ({info['manifest_size']} bytes, "
        f"{info['naming_scheme'].upper()} naming)",
        f"storage        data files format {info['data_storage_version']}",
        f"feature flags  reader {info['reader_feature_flags']['value']} "
        f"{info['reader_feature_flags']['names']}, writer {info['writer_feature_flags']['value']} "
        f"{info['writer_feature_flags']['names']}",
    ]
    if info["unsupported"]:
        out.append(f"WARNING        lancefmt cannot read this version: {info['unsupported']['read']}")
    out += [
        f"fragments      {info['fragments']}  ({info['data_files']} data files, "
        f"max fragment id {info['max_fragment_id']})",
        f"rows           {rows['live']} live = {rows['physical']} physical - {rows['deleted']} "
        f"deleted  ({info['deletion_files']} deletion files)",
        f"stable row ids {'yes (next row id ' + str(info['next_row_id']) + ')' if info['stable_row_ids'] else 'no'}",
        "schema",
    ]
    _print_fields(info["schema"], 1, out)
    out.append("bases" + ("          (none: every file under the dataset root)" if not info["bases"] else ""))
    for b in info["bases"]:
        kind = "dataset root" if b["is_dataset_root"] else "data directory"
        name = f" name={b['name']}" if b["name"] is not None else ""
        out.append(f"  - id {b['id']}{name}: {b['path']} ({kind})")
    out.append("tags" + ("           (none)" if not info["tags"] else ""))
    for name, t in info["tags"].items():
        out.append(f"  - {name} -> version {t['version']}" + (f" on branch {t['branch']}" if t["branch"] else ""))
    if info["branches"]:
        out.append("branches")
        for name, b in info["branches"].items():
            out.append(f"  - {name} from {b['parent_branch'] or 'main'} version {b['parent_version']}")
    if info["indices"]:
        out.append("indices")
        for i in info["indices"]:
            out.append(f"  - {i['name']} on field ids {i['fields']} (built at version {i['dataset_version']})")
    if info["config"]:
        out.append("config")
        for k, v in info["config"].items():
            out.append(f"  - {k} = {v}")
    return "\n".join(out)


def _cmd_inspect(args) -> int:
    info = describe(args.uri, _version_arg(args.version), _storage_options(args.storage_option),
                    args.manifest_store)
    print(json.dumps(info, indent=2) if args.json else render(info))
    return 0


def _cmd_versions(args) -> int:
    uri = normalize_uri(args.uri)
    versions = list_versions(uri, store=open_store(uri, _storage_options(args.storage_option),
                                                   as_manifest_store(args.manifest_store)))
    if args.json:
        print(json.dumps([{**v, "timestamp": v["timestamp"].isoformat(sep=" ")} for v in versions],
                         indent=2))
    else:
        for v in versions:
            md = v["metadata"]
            print(f"{v['version']:>6}  {v['timestamp'].isoformat(sep=' ')}  "
                  f"{md['total_fragments']} fragments, {md['total_rows']} rows")
    return 0


# -- multi-base and maintenance commands --------------------------------------------------------

def _open(args, version=None):
    from .dataset import Dataset

    return Dataset.open(args.uri, version, storage_options=_storage_options(args.storage_option),
                        manifest_store=args.manifest_store)


def _progress(args) -> bool:
    return sys.stderr.isatty() if args.progress is None else args.progress


def _emit(args, data, text_lines) -> None:
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        for line in text_lines:
            print(line)


def _bases_rows(ds) -> list[dict]:
    return [{"id": b.id, "name": b.name, "path": b.path, "is_dataset_root": b.is_dataset_root}
            for b in sorted(ds.base_paths.values(), key=lambda b: b.id)]


def _cmd_bases(args) -> int:
    from .table.base_paths import BasePath

    ds = _open(args, _version_arg(args.version))
    if args.action == "list":
        if args.args:
            raise SystemExit("lancefmt bases URI takes no more arguments (use 'set' or 'add')")
    elif args.action == "set":
        if len(args.args) != 2:
            raise SystemExit("usage: lancefmt bases URI set ID|NAME PATH")
        key, path = args.args
        ds = ds.checkout_latest().update_bases({int(key) if key.isdigit() else key: path})
    elif args.action == "add":
        if len(args.args) != 1:
            raise SystemExit("usage: lancefmt bases URI add PATH [--name NAME] [--dataset-root]")
        ds = ds.checkout_latest().add_bases([BasePath(args.args[0], args.name, args.dataset_root)])
    rows = _bases_rows(ds)
    lines = [f"version {ds.version}"] + [
        f"  {r['id']:>4}  {r['name'] or '-':<16} {r['path']}"
        f"{'  (dataset root)' if r['is_dataset_root'] else ''}" for r in rows]
    if not rows:
        lines.append("  (no bases: every file under the dataset root)")
    _emit(args, {"version": ds.version, "bases": rows}, lines)
    return 0


def _cmd_verify(args) -> int:
    from .dataset.maintain.verify import verify_dataset

    ds = _open(args, _version_arg(args.version))
    report = verify_dataset(ds.snapshot, progress=_progress(args))
    data = {"uri": ds.uri, "version": ds.version, **report.to_dict()}
    lines = [f"checked {report.checked_data_files} data files, {report.checked_deletion_files} "
             f"deletion files, {report.checked_indices} indices of version {ds.version}"]
    lines += [f"MISSING     {u}" for u in report.missing]
    lines += [f"UNREADABLE  {u}: {why}" for u, why in report.unreadable]
    lines.append("ok" if report.ok else
                 f"{len(report.missing)} missing, {len(report.unreadable)} unreadable")
    _emit(args, data, lines)
    return 0 if report.ok else 1


def _cmd_clone(args) -> int:
    ds = _open(args)
    clone = ds.shallow_clone(args.target, _version_arg(args.version))
    _emit(args, {"uri": clone.uri, "version": clone.version, "bases": _bases_rows(clone)},
          [f"cloned {ds.uri} version {clone.version} to {clone.uri}"])
    return 0


def _cmd_tags(args) -> int:
    ds = _open(args)
    if args.action == "create":
        if len(args.args) not in (1, 2):
            raise SystemExit("usage: lancefmt tags URI create NAME [VERSION]")
        ds.tags.create(args.args[0], int(args.args[1]) if len(args.args) == 2 else None)
    elif args.action == "delete":
        if len(args.args) != 1:
            raise SystemExit("usage: lancefmt tags URI delete NAME")
        ds.tags.delete(args.args[0])
    tags = ds.tags.list()
    lines = [f"{name} -> version {t['version']}" + (f" on branch {t['branch']}" if t["branch"] else "")
             for name, t in tags.items()] or ["(no tags)"]
    _emit(args, tags, lines)
    return 0


def _cmd_branches(args) -> int:
    ds = _open(args)
    if args.action == "create":
        if len(args.args) != 1:
            raise SystemExit("usage: lancefmt branches URI create NAME [--version V]")
        ds.create_branch(args.args[0], _version_arg(args.version))
    elif args.action == "delete":
        if len(args.args) != 1:
            raise SystemExit("usage: lancefmt branches URI delete NAME")
        ds.branches.delete(args.args[0])
    branches = ds.branches.list()
    lines = [f"{name} from {b['parent_branch'] or 'main'} version {b['parent_version']}"
             for name, b in branches.items()] or ["(no branches)"]
    _emit(args, branches, lines)
    return 0


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?|"
                       r"d|days?|w|weeks?)?\s*$")


def parse_duration(text: str) -> timedelta:
    """``14d``, ``36h``, ``30m``, ``90s``, ``2w``, ``14days`` (a bare number is seconds)."""
    m = _DURATION.match(text or "")
    if not m:
        raise SystemExit(f"not a duration: {text!r} (use e.g. 14d, 36h, 30m, 0s)")
    value, unit = float(m.group(1)), (m.group(2) or "s")[0]
    return timedelta(seconds=value * {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[unit])


def _cmd_cleanup(args) -> int:
    ds = _open(args)
    older_than = parse_duration(args.older_than) if args.older_than is not None else None
    stats = ds.cleanup_old_versions(
        older_than, args.retain_versions, delete_unverified=args.delete_unverified,
        error_if_tagged_old_versions=not args.ignore_tagged, dry_run=args.dry_run,
        clones=args.clone or (), owned_bases=args.owned_base or (), progress=_progress(args))
    verb = "would remove" if args.dry_run else "removed"
    lines = [f"{verb} {u}" for u in stats.removed] + [
        f"{verb} {stats.old_versions} old versions, {stats.data_files_removed} data files, "
        f"{stats.deletion_files_removed} deletion files, {stats.index_files_removed} index files, "
        f"{stats.transaction_files_removed} transaction files ({stats.bytes_removed} bytes)"
        + (f"; {stats.failed_deletes} deletes failed" if stats.failed_deletes else "")]
    _emit(args, stats.to_dict(), lines)
    return 0 if not stats.failed_deletes else 1


def _cmd_prefixes(args) -> int:
    ds = _open(args, _version_arg(args.version))
    prefixes = [p.to_dict() for p in ds.storage_prefixes()]
    lines = [f"{p['prefix']}  ({p['kind']}"
             + (f", base {p['base_id']}" + (f" {p['base_name']}" if p["base_name"] else "")
                if p["base_id"] is not None else "")
             + (f", {p['files']} files" if p["kind"] != "root" else "") + ")" for p in prefixes]
    _emit(args, {"uri": ds.uri, "version": ds.version, "prefixes": prefixes}, lines)
    return 0


def _cmd_compact(args) -> int:
    ds = _open(args)
    before = ds.version
    metrics = ds.optimize.compact_files(
        target_rows_per_fragment=args.target_rows_per_fragment,
        materialize_deletions=False if args.no_materialize_deletions else None,
        materialize_deletions_threshold=args.materialize_deletions_threshold,
        num_threads=args.threads, progress=_progress(args))
    info = {"uri": ds.uri, "read_version": before, "version": ds.version,
            "fragments_removed": metrics.fragments_removed,
            "fragments_added": metrics.fragments_added, "files_removed": metrics.files_removed,
            "files_added": metrics.files_added}
    if ds.version == before:
        lines = [f"nothing to compact in version {before}"]
    else:
        lines = [f"version {ds.version}: {metrics.fragments_removed} fragments "
                 f"({metrics.files_removed} files) rewritten as {metrics.fragments_added} "
                 f"({metrics.files_added} files)"]
    _emit(args, info, lines)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lancefmt", description="Inspect and manage Lance datasets.")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p):
        p.add_argument("uri", help="dataset URI (path, file://, memory://, s3://...)")
        p.add_argument("--storage-option", action="append", metavar="KEY=VALUE",
                       help="fsspec storage option (repeatable)")
        p.add_argument("--manifest-store", metavar="URI", default=None,
                       help="external manifest store (sqlite:///path or dynamodb://table?...)")
        p.add_argument("--json", action="store_true", help="machine-readable output")

    p = sub.add_parser("inspect", help="show one version's metadata")
    common(p)
    p.add_argument("--version", help="version number or tag name (default: latest)")
    p.set_defaults(func=_cmd_inspect)

    p = sub.add_parser("versions", help="list the versions")
    common(p)
    p.set_defaults(func=_cmd_versions)

    def progress(p):
        p.add_argument("--progress", dest="progress", action="store_true", default=None,
                       help="show progress bars (default: when stderr is a terminal)")
        p.add_argument("--no-progress", dest="progress", action="store_false")

    p = sub.add_parser("bases", help="list base paths; 'set ID|NAME PATH' relocates one; "
                                     "'add PATH' registers one")
    common(p)
    p.add_argument("action", nargs="?", choices=["list", "set", "add"], default="list")
    p.add_argument("args", nargs="*")
    p.add_argument("--version", help="version or tag to list (default: latest)")
    p.add_argument("--name", help="name of a base to add")
    p.add_argument("--dataset-root", action="store_true", help="the added base is a dataset root")
    p.set_defaults(func=_cmd_bases)

    p = sub.add_parser("verify", help="check every referenced file exists and opens")
    common(p)
    p.add_argument("--version", help="version or tag (default: latest)")
    progress(p)
    p.set_defaults(func=_cmd_verify)

    p = sub.add_parser("clone", help="shallow-clone a dataset")
    common(p)
    p.add_argument("target", help="URI of the new dataset")
    p.add_argument("--version", help="version or tag to clone (default: latest)")
    p.set_defaults(func=_cmd_clone)

    p = sub.add_parser("tags", help="list tags; 'create NAME [VERSION]'; 'delete NAME'")
    common(p)
    p.add_argument("action", nargs="?", choices=["list", "create", "delete"], default="list")
    p.add_argument("args", nargs="*")
    p.set_defaults(func=_cmd_tags)

    p = sub.add_parser("branches", help="list branches; 'create NAME'; 'delete NAME'")
    common(p)
    p.add_argument("action", nargs="?", choices=["list", "create", "delete"], default="list")
    p.add_argument("args", nargs="*")
    p.add_argument("--version", help="version or tag to branch from (default: latest)")
    p.set_defaults(func=_cmd_branches)

    p = sub.add_parser("cleanup", help="remove old versions and unreferenced files")
    common(p)
    p.add_argument("--older-than", help="age of versions to remove, e.g. 14d, 36h, 0s "
                                        "(default 14d unless --retain-versions is given)")
    p.add_argument("--retain-versions", type=int, help="keep the last N versions")
    p.add_argument("--dry-run", action="store_true", help="only report what would be removed")
    p.add_argument("--delete-unverified", action="store_true",
                   help="also remove unreferenced files younger than 7 days")
    p.add_argument("--ignore-tagged", action="store_true",
                   help="skip old tagged versions instead of failing")
    p.add_argument("--clone", action="append", metavar="URI",
                   help="a shallow clone whose files must survive (repeatable)")
    p.add_argument("--owned-base", action="append", metavar="NAME",
                   help="a base (name or id) this dataset alone owns: files removed versions "
                        "referenced there go too (repeatable; by default only the root is cleaned)")
    progress(p)
    p.set_defaults(func=_cmd_cleanup)

    p = sub.add_parser("prefixes", help="distinct storage prefixes a version touches")
    common(p)
    p.add_argument("--version", help="version or tag (default: latest)")
    p.set_defaults(func=_cmd_prefixes)

    p = sub.add_parser("compact", help="rewrite small and deletion-heavy fragments")
    common(p)
    p.add_argument("--target-rows-per-fragment", type=int, default=None)
    p.add_argument("--no-materialize-deletions", action="store_true",
                   help="leave fragments with deletions alone unless they are small")
    p.add_argument("--materialize-deletions-threshold", type=float, default=None)
    p.add_argument("--threads", type=int, default=None)
    progress(p)
    p.set_defaults(func=_cmd_compact)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except LanceError as e:
        print(f"lancefmt: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
