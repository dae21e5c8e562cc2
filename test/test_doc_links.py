"""No file of the repository cites a file that is not in it (issue 34): every relative Markdown
link, every repository path (``test/…``, ``mbs_dynamics/…``, ``bench/…``, …) and every ``*.md``
name in the sources, tests, READMEs and documentation names a file or folder that exists."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOPS = (".ci", "bench", "config", "doc", "examples", "launch", "mbs_dynamics", "resource", "test")
TEXT = (".py", ".pyx", ".pxd", ".md", ".txt", ".yaml", ".yml", ".cfg", ".toml", ".xml", ".h",
        ".in", ".sh")
SKIP_DIRS = {".git", "build", "dist", "__pycache__", ".pytest_cache", "_build", "out"}

#: a path into the repository: one of its top folders, then a name
REPO_PATH = re.compile(r"(?<![\w./~$-])((?:%s)/[\w./*-]*[\w*])" % "|".join(re.escape(t) for t in TOPS))
#: a Markdown link or image to a relative target
MD_LINK = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
#: a Markdown file named anywhere (``MATH.md``, ``doc/guide/cli.md``)
MD_NAME = re.compile(r"(?<![\w./-])([\w./-]*\w\.md)\b")


def _files():
    if not (ROOT / "mbs_dynamics").is_dir() or not (ROOT / "README.md").exists():
        pytest.skip("the repository is not beside the tests")
    out = []
    for d, dirs, files in os.walk(ROOT):
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.endswith(".egg-info")
                   and not x.startswith(".venv")]
        out += [Path(d) / f for f in files if f.endswith(TEXT) or f == "run"]
    return out


def _exists(name: str, here: Path) -> bool:
    name = name.split("#")[0].split("?")[0]
    if not name:
        return True
    if "*" in name:  # a glob names what it matches
        return any(any(base.glob(name)) for base in (ROOT, here))
    return any((base / name).exists() for base in (ROOT, here))


def broken_citations(path: Path, text: str):
    """(line, cited name) of every citation in ``text`` (of file ``path``) that names nothing."""
    here, bad = path.parent, []

    def line(pos):
        return text.count("\n", 0, pos) + 1

    for m in REPO_PATH.finditer(text):
        name = m.group(1).rstrip(".")
        if not any(c in name for c in "{<") and not _exists(name, here):
            bad.append((line(m.start()), name))
    if path.suffix == ".md":
        for m in MD_LINK.finditer(text):
            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith(("#", "/")):
                continue  # a URL, an anchor of this page, or a site-absolute path
            if not _exists(target, here):
                bad.append((line(m.start()), target))
    for m in MD_NAME.finditer(text):
        name = m.group(1)
        start = max(text.rfind(c, 0, m.start()) for c in " \n\t(<`'\"")
        if "://" in text[start + 1:m.end()]:
            continue  # part of a URL
        if not _exists(name, here) and Path(name).name not in _md_names():
            bad.append((line(m.start()), name))
    return bad


_MD = set()


def _md_names():
    """Names of the repository's Markdown files (a bare ``README.md`` names one of them)."""
    if not _MD:
        _MD.update(p.name for p in _files() if p.suffix == ".md")
    return _MD


def test_no_file_cites_a_file_that_is_not_in_the_repository():
    bad = []
    for p in _files():
        try:
            text = p.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if p == Path(__file__):
            continue
        bad += [f"{p.relative_to(ROOT)}:{n}: {name}" for n, name in broken_citations(p, text)]
    assert not bad, "citations of files that are not in the repository:\n" + "\n".join(bad)


def test_the_checker_finds_what_it_should():
    """The checker itself: a missing path, a missing link target and a bare MATH.md are found;
    an existing path, a URL and an anchor are not."""
    fake = ROOT / "README.md"
    text = ("see test/no_such_test.py and test/test_structure.py, [the math](doc/nope.md), "
            "[site](https://example.org/x.md), [here](#conventions), test/*/test_seed00*.py, "
            "test/test_nothing_*.py and MATH.md\n")
    found = {name for _, name in broken_citations(fake, text)}
    assert found == {"test/no_such_test.py", "doc/nope.md", "test/test_nothing_*.py", "MATH.md"}, found
