"""The package metadata: the licence as an SPDX expression (PEP 639; the TOML-table form is
deprecated in setuptools), a build requirement that reads it, and metadata built from
pyproject.toml without setuptools' deprecation warning."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+
canonicalize_license_expression = pytest.importorskip("packaging.licenses").canonicalize_license_expression
Requirement = pytest.importorskip("packaging.requirements").Requirement

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_license_is_an_spdx_expression():
    license_ = PYPROJECT["project"]["license"]
    assert isinstance(license_, str)
    assert canonicalize_license_expression(license_) == license_ == "MIT"


def test_build_requires_a_setuptools_that_reads_license_expressions():
    """Setuptools 77 is the first to accept ``license = "MIT"``; an older floor would let a
    fresh build environment pick one that refuses it."""
    setuptools = next(Requirement(r) for r in PYPROJECT["build-system"]["requires"]
                      if Requirement(r).name == "setuptools")
    assert not setuptools.specifier.contains("76.1.0") and setuptools.specifier.contains("77.0.0")


def test_metadata_builds_without_a_license_deprecation(tmp_path):
    """Metadata from our pyproject.toml (a stub package beside it) by the installed setuptools:
    a License-Expression field, no deprecation warning about the licence."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    shutil.copy(ROOT / "README.md", tmp_path)
    (tmp_path / "adapath").mkdir()
    (tmp_path / "adapath" / "__init__.py").write_text("")
    (tmp_path / "meta").mkdir()
    script = ("import setuptools.build_meta as b; d = b.prepare_metadata_for_build_wheel('meta'); "
              "print(open('meta/' + d + '/METADATA').read())")
    done = subprocess.run([sys.executable, "-W", "always", "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, env=dict(os.environ, PYTHONWARNINGS="always"))
    assert done.returncode == 0, done.stderr
    assert "License-Expression: MIT" in done.stdout.splitlines()
    assert "license" not in done.stderr.lower(), done.stderr
