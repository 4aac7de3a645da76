"""The ``lancefmt`` command.

``lancefmt inspect URI [--version N|TAG] [--json]`` shows one version's metadata (schema,
fragments, rows, storage version, feature flags, base paths, tags, naming scheme);
``lancefmt versions URI [--json]`` lists the versions. Subcommands are argparse sub-parsers, so
``bases``, ``verify``, ``cleanup``, ... slot in beside them.
"""
from __future__ import annotations

import argparse
import json
import sys

from .errors import LanceError
from .io import normalize_uri, open_store
from .table import feature_flags as ff
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


def describe(uri: str, version=None, storage_options: dict | None = None) -> dict:
    """Everything ``inspect`` shows, as plain data (also the ``--json`` output)."""
    uri = normalize_uri(uri)
    store = open_store(uri, storage_options)
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
    info = describe(args.uri, _version_arg(args.version), _storage_options(args.storage_option))
    print(json.dumps(info, indent=2) if args.json else render(info))
    return 0


def _cmd_versions(args) -> int:
    versions = list_versions(normalize_uri(args.uri), storage_options=_storage_options(args.storage_option))
    if args.json:
        print(json.dumps([{**v, "timestamp": v["timestamp"].isoformat(sep=" ")} for v in versions],
                         indent=2))
    else:
        for v in versions:
            md = v["metadata"]
            print(f"{v['version']:>6}  {v['timestamp'].isoformat(sep=' ')}  "
                  f"{md['total_fragments']} fragments, {md['total_rows']} rows")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lancefmt", description="Inspect and manage Lance datasets.")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p):
        p.add_argument("uri", help="dataset URI (path, file://, memory://, s3://...)")
        p.add_argument("--storage-option", action="append", metavar="KEY=VALUE",
                       help="fsspec storage option (repeatable)")
        p.add_argument("--json", action="store_true", help="machine-readable output")

    p = sub.add_parser("inspect", help="show one version's metadata")
    common(p)
    p.add_argument("--version", help="version number or tag name (default: latest)")
    p.set_defaults(func=_cmd_inspect)

    p = sub.add_parser("versions", help="list the versions")
    common(p)
    p.set_defaults(func=_cmd_versions)
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
