"""Where a DAG run may point: the configured lake/warehouse, or under LAKESCOUT_ALLOWED_ROOTS, with no way out."""
from __future__ import annotations

import os

import pytest

from discovery.orchestration.allowed_roots import ALLOWED_ROOTS, LocationError, check_location


@pytest.fixture
def tree(tmp_path, monkeypatch):
    for d in ("deploy/warehouse", "shared/lakes/sales", "private"):
        (tmp_path / d).mkdir(parents=True)
    os.symlink(tmp_path / "private", tmp_path / "shared/lakes/link")
    monkeypatch.setenv(ALLOWED_ROOTS, ",".join([str(tmp_path / "shared/lakes"), "s3://bucket/lakes"]))
    return tmp_path


def test_the_configured_location_and_those_under_allowed_roots_pass(tree):
    default = str(tree / "deploy/warehouse")
    assert check_location("warehouse", default, default) == default
    assert check_location("warehouse", default + "/", default) == default + "/"
    for ok in (tree / "shared/lakes", tree / "shared/lakes/sales", tree / "shared/lakes/new/sub"):
        assert check_location("lake", str(ok), default) == str(ok)
    assert check_location("lake", "s3://bucket/lakes/sales", default) == "s3://bucket/lakes/sales"


@pytest.mark.parametrize("outside", ["private", "shared/lakes/../../private", "shared/lakes/link", "shared/lakes-x",
                                     "deploy", "/etc", "s3://bucket/lakes-x", "s3://bucket", "s3://other/lakes"])
def test_locations_outside_are_refused_naming_the_param_not_the_value(tree, outside):
    value = outside if outside.startswith(("/", "s3:")) else str(tree / outside)
    with pytest.raises(LocationError) as err:
        check_location("lake", value, str(tree / "deploy/warehouse"))
    assert "param 'lake'" in str(err.value) and value not in str(err.value)


@pytest.mark.parametrize("bad", ["", "   ", None, 3, ["/tmp"]])
def test_a_location_must_be_a_non_empty_string(tree, bad):
    with pytest.raises(LocationError, match="param 'warehouse'"):
        check_location("warehouse", bad, str(tree / "deploy/warehouse"))


def test_without_allowed_roots_only_the_configured_location_passes(tree, monkeypatch):
    monkeypatch.delenv(ALLOWED_ROOTS)
    default = str(tree / "deploy/warehouse")
    assert check_location("warehouse", default, default) == default
    with pytest.raises(LocationError):
        check_location("warehouse", str(tree / "shared/lakes/sales"), default)
