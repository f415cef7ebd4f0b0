"""The package's annotations: ``mypy --strict`` (pinned in the CI venv) passes over the package and
over a typical consumer (typecheck/consumer.py), so ``py.typed`` promises something true."""

import subprocess
import sys
import unittest
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]


class TypingTest(unittest.TestCase):
    def mypy(self, *targets: str) -> None:
        out = subprocess.run(
            [sys.executable, "-m", "mypy", "--strict", "--python-version", "3.10", "--no-incremental", "--cache-dir", "/dev/null", *targets],
            cwd=PROJECT,
            env={"MYPYPATH": str(PROJECT / "src"), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=300,
        )
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)

    def test_package_passes_mypy_strict(self) -> None:
        self.mypy("src/companion")

    def test_a_typical_consumer_type_checks(self) -> None:
        self.mypy("tests/typecheck/consumer.py")


if __name__ == "__main__":
    unittest.main()
