"""The package installs without its C++ extension (no compiler, or switched off) and says so."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_without_the_extension_builds_and_falls_back_to_numba(tmp_path):
    env = {**os.environ, "SKBUILD_CMAKE_DEFINE": "CODEWORLD_BUILD_CORE=OFF",
           "SKBUILD_BUILD_DIR": str(tmp_path / "build")}
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path / "dist"), str(ROOT)],
        capture_output=True, text=True, env=env, timeout=600)
    assert build.returncode == 0, build.stderr[-2000:]
    wheels = list((tmp_path / "dist").glob("codeworld-*.whl"))
    assert len(wheels) == 1
    names = zipfile.ZipFile(wheels[0]).namelist()
    assert "codeworld/_backend.py" in names and "codeworld/_core.pyi" in names
    assert not [n for n in names if n.startswith("codeworld/_core") and n.endswith((".so", ".pyd"))]

    # Installed alone, it runs on the Numba fallback. Its dependencies come from this environment's
    # site-packages, put on the path by hand: -S skips the .pth files, so this checkout's editable
    # install (which would supply the extension) stays out of the way.
    target = tmp_path / "site"
    zipfile.ZipFile(wheels[0]).extractall(target)
    python_path = os.pathsep.join([str(target), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    probe = subprocess.run(
        [sys.executable, "-S", "-c", "import codeworld; print(codeworld.core_available(), codeworld.backend(), "
                               "codeworld.__file__)"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
        env={**os.environ, "PYTHONPATH": python_path})
    assert probe.returncode == 0, probe.stderr
    available, chosen, path = probe.stdout.split()
    assert (available, chosen) == ("False", "numba")
    assert path.startswith(str(target))
