"""The source checkout imports as it stands: `diffc.dialects/passes/tools` map to its top-level folders.

Run from the repository root, Python finds `diffc/` here before any installed copy; the three
packages the install maps under `diffc` must then come from this same checkout.
"""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_subpackages_come_from_this_checkout(tmp_path):
    code = (
        "import diffc.dialects.diff, diffc.passes.diff_rev, diffc.tools.diffc_opt;"
        "print(diffc.dialects.diff.__file__);print(diffc.passes.diff_rev.__file__);"
        "print(diffc.tools.diffc_opt.__file__)"
    )
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == [os.path.join(ROOT, "dialects", "diff.py"), os.path.join(ROOT, "passes", "diff_rev.py"),
                   os.path.join(ROOT, "tools", "diffc_opt.py")]
