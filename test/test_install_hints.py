"""Every install hint installs this project, never the different project a package index holds under
the name `sequence-ai`; and the version says what this one is compatible with.

A hint names an extra's packages themselves (`sequence_ai/_extras.py`, held equal to pyproject.toml
here) or installs from the checkout (`pip install '.[record]'`). Read from every file of the
repository, the code's messages and what the tests expect of them included, but requirements/scratch/
and test/reference/ (which install and run the public 0.20.0 on purpose) and this file's own examples."""

from __future__ import annotations

import re
import shlex
import subprocess
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import List

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from sequence_ai import __version__
from sequence_ai._extras import EXTRAS, install_hint
from sequence_ai._net._http import USER_AGENT

ROOT = Path(__file__).resolve().parents[1]
PROJECT = re.compile(r"^sequence[-_.]ai(\[[^\]]*\])?\s*([<>=!~].*)?$", re.I)


def _files() -> List[Path]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    paths = [ROOT / line for line in listed.splitlines()
             if not line.startswith(("requirements/scratch/", "test/reference/", "test/test_install_hints.py"))]
    return [p for p in paths if p.is_file() and p.suffix not in (".png", ".jpg", ".mcap")]


def hints_naming_the_project(text: str) -> List[str]:
    """Each `pip install` (or requirement with an extra) in `text` that would fetch `sequence-ai` by name."""
    found = [m.group(0) for m in re.finditer(r"sequence[-_]ai\[[^\]]*\]", text, flags=re.I)]
    for command in re.finditer(r"pip3?\s+install\s+([^`\n]*)", text):
        try:
            words = shlex.split(command.group(1), comments=True)
        except ValueError:  # an unbalanced quote: a fragment inside a sentence
            words = command.group(1).split()
        found += [command.group(0) for word in words if PROJECT.match(word.strip("'\"()"))]
    return found


def test_the_check_catches_a_hint_that_names_the_project():
    assert hints_naming_the_project("run: pip install 'sequence-ai[record]'") != []
    assert hints_naming_the_project("pip install -U sequence-ai") != []
    assert hints_naming_the_project("`pip install sequence_ai>=0.20`") != []
    assert hints_naming_the_project("needs sequence-ai[serve])") != []
    assert hints_naming_the_project("pip install '.[record]' or pip install 'mcap>=1.6,<2'") == []
    assert hints_naming_the_project("pip install '/path/to/this/checkout[lerobot]'") == []


def test_no_hint_in_code_or_docs_installs_the_other_project():
    offenders = {str(p.relative_to(ROOT)): found for p in _files() if (found := hints_naming_the_project(p.read_text()))}
    assert offenders == {}


def test_the_extras_named_in_hints_are_pyprojects():
    tomllib = pytest.importorskip("tomllib")
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {name: tuple(r.split(";")[0].strip() for r in rows) for name, rows in declared.items()} == EXTRAS


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_each_hint_installs_exactly_its_extras_packages(extra):
    hint = install_hint(extra)
    assert hint.startswith("pip install ") and not hints_naming_the_project(hint)
    command = hint.split(" (")[0]
    assert shlex.split(command)[2:] == list(EXTRAS[extra])


def test_the_version_says_it_speaks_the_0_20_0_wire_and_is_this_projects_release():
    version = Version(__version__)
    package_xml = ElementTree.parse(ROOT / "package.xml").getroot().findtext("version")
    assert version.public == "0.20.0" and version.local == f"ros.{package_xml}"
    for requirement in (">=0.20", "==0.20.0", "~=0.20.0", ">=0.20,<0.21"):
        assert version in SpecifierSet(requirement), requirement  # a requirement on the 0.20 client keeps this one
    assert f"sequence-ai-python/{__version__}" == USER_AGENT
