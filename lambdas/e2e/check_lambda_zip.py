#!/usr/bin/env python3
"""Checks a `cargo lambda build --output-format zip` package before Terraform would upload it.

usage: check_lambda_zip.py ZIP ENTRY...

Fails unless the zip holds exactly ENTRY... (the first being `bootstrap`), `bootstrap` is an
executable x86-64 ELF, every glibc symbol version it needs exists on provided.al2023 (glibc 2.34),
and the package fits Lambda's limits (50 MB zipped for a direct upload, 250 MB unzipped).
"""

import os
import re
import stat
import sys
import zipfile

AL2023_GLIBC = (2, 34)
MAX_ZIPPED = 50 * 1024 * 1024
MAX_UNZIPPED = 250 * 1024 * 1024


def fail(msg: str) -> None:
    print(f"check_lambda_zip: {msg}", file=sys.stderr)
    sys.exit(1)


def main() -> None:
    if len(sys.argv) < 3:
        fail(__doc__.strip().splitlines()[2])
    path, expected = sys.argv[1], sorted(sys.argv[2:])
    with zipfile.ZipFile(path) as z:
        infos = {i.filename: i for i in z.infolist() if not i.is_dir()}
        if sorted(infos) != expected:
            fail(f"{path} holds {sorted(infos)}, expected {expected}")
        boot = infos["bootstrap"]
        mode = boot.external_attr >> 16
        if not mode & stat.S_IXUSR:
            fail(f"bootstrap in {path} is not executable (mode {oct(mode)})")
        elf = z.read("bootstrap")
        unzipped = sum(i.file_size for i in infos.values())
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or int.from_bytes(elf[18:20], "little") != 62:
        fail("bootstrap is not a 64-bit x86-64 ELF")
    needed = {
        tuple(int(p) for p in m.group(1).split(b"."))
        for m in re.finditer(rb"GLIBC_(\d+\.\d+(?:\.\d+)?)\x00", elf)
    }
    newest = max(needed, default=(0,))
    if newest > AL2023_GLIBC:
        fail(f"bootstrap needs GLIBC_{'.'.join(map(str, newest))}, provided.al2023 has 2.34")
    zipped = os.path.getsize(path)
    if zipped > MAX_ZIPPED or unzipped > MAX_UNZIPPED:
        fail(f"{path} is {zipped} bytes zipped / {unzipped} unzipped: over Lambda's limits")
    print(
        f"{path}: {zipped / 1e6:.1f} MB zipped, {unzipped / 1e6:.1f} MB unzipped, "
        f"entries {expected}, newest glibc symbol {'.'.join(map(str, newest))}"
    )


if __name__ == "__main__":
    main()
