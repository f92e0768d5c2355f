"""The documentation's examples: docs/python.md's Python examples run as
doctests, and every shell block of README.md and docs/*.md runs against
bin/dplr.

Shell blocks are fenced with an info string: ``sh`` runs (each file's blocks
in order, in one temporary directory with one fresh DPLR_HOME, under
``bash -euo pipefail``, and must succeed), ``sh fashion-mnist`` runs only
when Debian's dataset-fashion-mnist is installed, ``sh not-run`` never runs
(the text says why). Any other ``sh`` marker fails the test, so a block
cannot drop out of it unnoticed."""

from __future__ import annotations

import doctest
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import BIN, PLUGINS, ROOT

FMNIST = Path("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(sh|bash|console|shell)\b([^\n]*)\n(.*?)^```\s*$", re.S | re.M)


def shell_blocks(path: Path) -> list[tuple[str, str]]:
    """The (marker, code) of every shell block in path, in order."""
    return [(m.group(2).strip(), m.group(3)) for m in FENCE.finditer(path.read_text(encoding="utf-8"))]


def test_python_examples():
    text = (ROOT / "docs" / "python.md").read_text(encoding="utf-8")
    test = doctest.DocTestParser().get_doctest(text, {}, "docs/python.md", "docs/python.md", 0)
    assert len(test.examples) > 20
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    res = runner.summarize(verbose=False)
    assert res.failed == 0, f"{res.failed} of {res.attempted} docs/python.md examples failed (output above)"


def test_every_shell_block_is_marked():
    for path in DOCS:
        for marker, code in shell_blocks(path):
            assert marker in ("", "fashion-mnist", "not-run"), f"{path.name}: unknown shell block marker {marker!r}:\n{code}"


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_shell_blocks(path, tmp_path):
    blocks = [(m, c) for m, c in shell_blocks(path) if m == "" or (m == "fashion-mnist" and FMNIST.exists())]
    if not blocks:
        pytest.skip(f"{path.name}: no runnable shell block")
    env = {**os.environ, "PATH": f"{BIN.parent}{os.pathsep}{os.environ['PATH']}",
           "DPLR_HOME": str(tmp_path / "home"), "DPLR_PLUGIN_PATH": str(PLUGINS)}
    work = tmp_path / "work"
    work.mkdir()
    for i, (_, code) in enumerate(blocks):
        r = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=work, env=env,
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"{path.name} shell block {i + 1} exited {r.returncode}:\n{code}\nstdout:\n{r.stdout[-3000:]}\nstderr:\n{r.stderr[-3000:]}"
