"""The README's example, run as the README shows it."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def blocks():
    text = open(os.path.join(ROOT, "README.md")).read()
    return re.findall(r"<!-- example -->\n```python\n(.*?)```", text, re.S)


def test_readme_example_runs(env, tmp_path):
    code = blocks()
    assert code, "README has no example block"
    for i, src in enumerate(code):
        f = tmp_path / f"example{i}.py"
        f.write_text(src)
        r = subprocess.run(
            [sys.executable, str(f)],
            env={**os.environ, "LOCKD_ADDRESS": env.a, "PYTHONPATH": ROOT},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 0, r.stdout + r.stderr
        assert "fence" in r.stdout, r.stdout


def test_readme_links_the_protocol_that_exists():
    text = open(os.path.join(ROOT, "README.md")).read()
    assert "PROTOCOL.md" not in text  # never was in the repository
    links = re.findall(r"\]\(([^)#]+)", text)
    assert "../../doc/protocol.md" in links
    for target in links:
        if "://" not in target:
            assert os.path.exists(os.path.join(ROOT, target)), target
