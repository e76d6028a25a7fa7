"""installed_packages (every stage record's `packages` and the hash the stage identities take)
reads names and versions from the metadata files' header lines: the same values as
importlib.metadata's email-parsed `metadata["Name"]` and `version`, on this environment's every
distribution and on files made to be awkward."""

from __future__ import annotations

import importlib.metadata as md

import pytest

from duplexeval_common.stage import _name_and_version, installed_packages


def parsed(dist) -> tuple[str, str]:
    return (dist.metadata["Name"] or ""), dist.version


def test_every_installed_distribution_reads_as_the_email_parser_reads_it():
    dists = list(md.distributions())
    assert len(dists) > 100
    for d in dists:
        assert _name_and_version(d) == parsed(d), d._path
    slow: dict[str, str] = {}
    for d in dists:
        name = parsed(d)[0].lower()
        if name:
            slow[name] = d.version
    assert installed_packages() == dict(sorted(slow.items()))


@pytest.mark.parametrize("text", [
    "Metadata-Version: 2.1\nName: Plain\nVersion: 1.0\n\nName: not-a-header\nVersion: 9\n",
    "Metadata-Version: 2.1\r\nName:  spaced-out\t\r\nVersion:\t2.0.post1 \r\n\r\nbody",
    "name: lower-case-keys\nVERSION: 3\n",
    "Name: first\nName: second\nVersion: 1\nVersion: 2\n",
    "Summary: a summary\n   that continues\nName: after-continuation\nVersion: 4\n",
    "Name: folded\n    name\nVersion: 5\n",           # a continued Name: the slow path
    "Version: 6\n",                                      # no Name
    "Name: x\nVersion: 7",                               # no final newline
    "Name: \nVersion: 8\n",                              # an empty name
    "Description: has: colons\nName: colons\nVersion: 9\n",
    "Name: before\nnot a header line\nVersion: 10\n",     # the body starts at the bad line
    "Summary: x\nbad name: y\nName: late\nVersion: 11\n",
], ids=["body-ignored", "crlf-and-blanks", "case", "first-wins", "other-continued", "name-continued",
        "no-name", "no-newline", "empty-name", "colons", "bad-line", "space-in-name"])
def test_awkward_metadata_files(tmp_path, text):
    info = tmp_path / "pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_bytes(text.encode())
    d = md.PathDistribution(info)
    assert _name_and_version(d) == parsed(d)


def test_pkg_info_when_there_is_no_metadata_file(tmp_path):
    info = tmp_path / "old.egg-info"
    info.mkdir()
    (info / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: Old-Style\nVersion: 0.9\n")
    d = md.PathDistribution(info)
    assert _name_and_version(d) == parsed(d) == ("Old-Style", "0.9")
