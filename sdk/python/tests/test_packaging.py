"""Packaging: a wheel and an sdist build from a copy of the project (``python -m build``, no
isolation: the CI venv pins setuptools and build), the wheel installs into a fresh venv and imports
there with its ``py.typed`` marker, and the sdist carries the sources."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest
import zipfile
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]


class PackagingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = Path(tempfile.mkdtemp(prefix="sdk-py-pack-"))
        src = cls.tmp / "project"
        # Built from a copy so the build leaves no egg-info or build/ in the repository.
        shutil.copytree(PROJECT, src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist"))
        cls.dist = cls.tmp / "dist"
        out = subprocess.run(
            [sys.executable, "-m", "build", "--no-isolation", "--sdist", "--wheel", "--outdir", str(cls.dist), str(src)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if out.returncode != 0:
            raise AssertionError(f"python -m build failed:\n{out.stdout}\n{out.stderr}")

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_wheel_holds_the_package_and_py_typed(self) -> None:
        (wheel,) = self.dist.glob("companion_sdk-1.0.0-py3-none-any.whl")
        names = set(zipfile.ZipFile(wheel).namelist())
        for f in ("companion/__init__.py", "companion/client.py", "companion/webhooks.py", "companion/types.py", "companion/py.typed"):
            self.assertIn(f, names)
        self.assertFalse(any(n.startswith("tests/") for n in names), names)
        meta = zipfile.ZipFile(wheel).read("companion_sdk-1.0.0.dist-info/METADATA").decode()
        self.assertIn("Requires-Python: >=3.10", meta)
        self.assertNotIn("Requires-Dist", meta)

    def test_sdist_holds_the_sources(self) -> None:
        (sdist,) = self.dist.glob("companion_sdk-1.0.0.tar.gz")
        names = {n.split("/", 1)[1] for n in tarfile.open(sdist).getnames() if "/" in n}
        for f in ("pyproject.toml", "README.md", "LICENSE", "src/companion/client.py", "src/companion/py.typed"):
            self.assertIn(f, names)

    def test_wheel_installs_into_a_fresh_venv_and_imports(self) -> None:
        venv = self.tmp / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
        py = venv / "bin" / "python"
        (wheel,) = self.dist.glob("*.whl")
        subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", str(wheel)], check=True, timeout=300)
        script = (
            "import json, pathlib, companion\n"
            "from companion import Client, CompanionError, verify_webhook, VERSION\n"
            "p = pathlib.Path(companion.__file__).parent\n"
            "print(json.dumps({'version': VERSION, 'path': str(p), 'typed': (p / 'py.typed').exists(),"
            " 'repr': repr(Client(api_key='cpk_secret', base_url='http://127.0.0.1:1'))}))\n"
        )
        # From an empty directory, so nothing but the installed package can be imported.
        out = subprocess.run([str(py), "-c", script], cwd=self.tmp, capture_output=True, text=True, check=True, timeout=60)
        info = json.loads(out.stdout)
        self.assertEqual(info["version"], "1.0.0")
        self.assertTrue(info["path"].startswith(str(venv)), info["path"])
        self.assertTrue(info["typed"])
        self.assertNotIn("cpk_secret", info["repr"])


if __name__ == "__main__":
    unittest.main()
