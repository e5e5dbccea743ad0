# SPDX-License-Identifier: MIT
"""The package as installed: `import nearby` from outside the source tree finds the installed
module (python/run_tests.sh installs it into a fresh venv with pip before running pytest)."""
import os
import subprocess
import sys

import pytest

import nearby

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../python


def test_version():
    assert nearby.__version__ == nearby.library_version()
    assert nearby.__version__.count(".") == 2


@pytest.mark.skipif(os.environ.get("NB_PY_INSTALLED") != "1",
                    reason="run by python/run_tests.sh after installing into a fresh venv")
def test_installed_outside_source_tree(tmp_path):
    assert sys.prefix != sys.base_prefix, "not running in the venv"
    assert not nearby.__file__.startswith(SOURCE + os.sep), nearby.__file__
    assert nearby.__file__.startswith(sys.prefix), nearby.__file__
    code = ("import nearby, numpy as np; g = nearby.Grid(np.array([[0., 0.], [1., 0.]])); "
            "print(nearby.__file__); print(g.query_pairs(1.0))")
    out = subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path), check=True,
                         capture_output=True, text=True, env={"PATH": os.environ["PATH"]})
    lines = out.stdout.splitlines()
    assert lines[1] == "{(0, 1)}"
    assert lines[0].startswith(sys.prefix) and not lines[0].startswith(SOURCE + os.sep)
