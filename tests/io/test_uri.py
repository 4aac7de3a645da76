import os

import pytest

from lancefmt.errors import InvalidPathError
from lancefmt.io import check_base_uri, check_relative, child, join_uri, normalize_uri, split_uri


def test_split_local_paths_become_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert split_uri("ds") == ("file", str(tmp_path / "ds"))
    assert split_uri("file:///a/b") == ("file", "/a/b")
    assert split_uri("/a/b/") == ("file", "/a/b")


def test_split_remote():
    assert split_uri("s3://bucket/key/x") == ("s3", "bucket/key/x")
    assert split_uri("s3a://bucket/k") == ("s3", "bucket/k")
    assert split_uri("memory://ds") == ("memory", "/ds")


def test_join_is_inverse():
    for uri in ["s3://b/k", "memory://ds/x", "/tmp/a"]:
        assert join_uri(*split_uri(uri)) == uri


def test_normalize_and_child():
    assert normalize_uri("s3://b/k/") == "s3://b/k"
    assert child("s3://b/k", "data", "x.lance") == "s3://b/k/data/x.lance"
    assert child("/tmp/ds/", "_versions") == "/tmp/ds/_versions"


@pytest.mark.parametrize("bad", ["", "/etc/passwd", "../x", "a/../../x", "a//b", "./a",
                                 "s3://b/k", "C:\\x", "a\\b", "a\x00b", "a/.."])
def test_check_relative_refuses_escapes(bad):
    with pytest.raises(InvalidPathError):
        check_relative(bad)


@pytest.mark.parametrize("good", ["x.lance", "a/b.lance", "0-1-2.arrow"])
def test_check_relative_accepts(good):
    assert check_relative(good) == good


@pytest.mark.parametrize("bad", ["s3://b/../x", "/data/../etc", "memory://a/./b", ""])
def test_check_base_refuses(bad):
    with pytest.raises(InvalidPathError):
        check_base_uri(bad)


def test_check_base_accepts():
    assert check_base_uri("s3://b/k") == "s3://b/k"
    assert check_base_uri("/tmp/x") == "/tmp/x"
