# SPDX-License-Identifier: MIT
"""The adapter that runs scipy's own kd-tree tests against nearby.

python/run_tests.sh copies scipy/spatial/tests/test_kdtree.py from the installed scipy next to
this file (as conftest.py) and runs it unchanged. Before the test module imports, scipy.spatial's
KDTree and cKDTree are replaced by nearby's, so every test that builds a tree builds nearby's.
A test stopped by nearby's ValueError for data of four or more dimensions is reported as
skipped; the summary prints the counts of passed, skipped for 4D+ and failed tests.
"""
import pytest
import scipy.spatial

import nearby

scipy.spatial.KDTree = nearby.KDTree
scipy.spatial.cKDTree = nearby.cKDTree

_DIMS = "supports 1, 2 or 3 dimensions"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    exc = call.excinfo
    if report.failed and exc is not None and exc.errisinstance(ValueError) and \
            _DIMS in str(exc.value):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, "Skipped: 4D+ data")
        report.nearby_4d = True


def pytest_terminal_summary(terminalreporter):
    stats = terminalreporter.stats
    skipped = [r for r in stats.get("skipped", []) if getattr(r, "nearby_4d", False)]
    other_skips = len(stats.get("skipped", [])) - len(skipped)
    passed = len([r for r in stats.get("passed", []) if r.when == "call"])
    failed = len(stats.get("failed", [])) + len(stats.get("error", []))
    terminalreporter.write_line(
        "scipy %s test_kdtree.py against nearby.cKDTree/KDTree: %d passed, %d skipped for 4D+ "
        "data, %d failed%s" % (scipy.__version__, passed, len(skipped), failed,
                               ", %d other skips" % other_skips if other_skips else ""))
