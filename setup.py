"""Build script: generates the protobuf modules from protos/ and compiles the Cython extensions.

Both steps are mandatory. There is no pure-Python fallback for the extensions: a build that
cannot compile them fails here, and an install without them fails at import time.
"""
import glob
import os
import re
import sys

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext as _build_ext
from setuptools.modified import newer_group

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.join(HERE, "protos")
PROTO_OUT = os.path.join(HERE, "lancefmt", "_proto")


def _stale(proto_files, out_files):
    if not all(os.path.exists(p) for p in out_files):
        return True
    newest_in = max(os.path.getmtime(p) for p in proto_files + [__file__])
    return any(os.path.getmtime(p) < newest_in for p in out_files)


def generate_protos():
    """Run protoc (from grpcio-tools) over protos/*.proto into lancefmt/_proto/.

    protoc emits absolute imports (``import file_pb2``); they are rewritten to package-relative
    ones so the generated modules live inside ``lancefmt._proto``.
    """
    protos = sorted(glob.glob(os.path.join(PROTO_DIR, "*.proto")))
    outputs = [
        os.path.join(PROTO_OUT, os.path.basename(p)[: -len(".proto")] + "_pb2.py") for p in protos
    ]
    if not _stale(protos, outputs):
        return
    from grpc_tools import protoc
    import grpc_tools

    well_known = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    args = ["protoc", f"-I{PROTO_DIR}", f"-I{well_known}", f"--python_out={PROTO_OUT}"] + protos
    if protoc.main(args) != 0:
        sys.exit("protoc failed on protos/*.proto")
    local = {os.path.basename(p)[: -len(".proto")] + "_pb2" for p in protos}
    for out in outputs:
        with open(out, encoding="utf-8") as f:
            text = f.read()
        text = re.sub(
            r"^import (\w+_pb2) as (\w+)$",
            lambda m: f"from . import {m.group(1)} as {m.group(2)}" if m.group(1) in local else m.group(0),
            text,
            flags=re.M,
        )
        with open(out, "w", encoding="utf-8") as f:
            f.write(text)


def extensions():
    sources = sorted(glob.glob(os.path.join("lancefmt", "**", "*.pyx"), recursive=True))
    exts = []
    for src in sources:
        module = src[: -len(".pyx")].replace(os.sep, ".")
        exts.append(
            Extension(
                module,
                [src],
                include_dirs=[numpy.get_include(), "lancefmt"],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                # no fused multiply-adds the source does not ask for: distance kernels must
                # add in the order pylance does, whatever the target CPU
                extra_compile_args=["-O3", "-ffp-contract=off"],
            )
        )
    return cythonize(
        exts,
        compiler_directives={"language_level": "3", "embedsignature": True},
        include_path=["lancefmt"],
    )


class build_ext(_build_ext):
    """An editable install (``pip install -e``) compiles every extension again in a temporary
    directory, although ``setup.py build_ext --inplace`` (``make build``) already built them in
    the tree: an extension whose in-place build is newer than its sources is copied instead."""

    def build_extension(self, ext):
        built = os.path.join(HERE, self.get_ext_filename(ext.name))
        if (self.editable_mode and os.path.exists(built)
                and not newer_group(list(ext.sources) + list(ext.depends or []), built)):
            print(f"reusing the in-place build of {ext.name}")
            target = self.get_ext_fullpath(ext.name)
            self.mkpath(os.path.dirname(target))
            self.copy_file(built, target)
            return
        super().build_extension(ext)


generate_protos()
setup(ext_modules=extensions(), cmdclass={"build_ext": build_ext})
