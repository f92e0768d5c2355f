"""The README's Python examples ("Using dplr from Python"), run as doctests."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"^## Using dplr from Python\n(.*?)^## ", text, re.S | re.M)
    assert m, "README has no section 'Using dplr from Python'"
    return m.group(1)


def test_readme_python_examples():
    section = readme_section()
    test = doctest.DocTestParser().get_doctest(section, {}, "README.md: Using dplr from Python", "README.md", 0)
    assert len(test.examples) > 20
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    res = runner.summarize(verbose=False)
    assert res.failed == 0, f"{res.failed} of {res.attempted} README examples failed (output above)"
