#!/usr/bin/env python3
"""`make verify` (docs paths): no document quotes a path of the machine it was written on.

Docs and READMEs show commands anyone can run, relative to the repository (`.cache/...`,
`../shared/data/sofia`), never where one build machine kept things. Checked: every Markdown file
in git (docs/, READMEs, changelogs). Refused: paths under /work/, /root/ and /home/<user>/
(/home/app is the images' application home, a path inside the images), and this checkout's own
absolute path or its parent folder's. Prints file:line: the path, and exits 1 when there is one.

    python3 hack/check-doc-paths.py
"""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MACHINE = re.compile(r"(?<![\w.~$}/-])/(?:work|root|home/(?!app\b)[\w.-]+)(?:/[^\s`'\")\]|,;]*)?")


def markdown_files() -> list[str]:
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "--", "*.md"], check=True, capture_output=True, text=True).stdout
        return [p for p in out.split("\0") if p]
    except (OSError, subprocess.CalledProcessError):  # no git: every Markdown file outside the caches
        found = []
        for d, dirs, files in os.walk(ROOT):
            dirs[:] = [x for x in dirs if x not in (".cache", ".git", "node_modules", "dist")]
            found += [os.path.relpath(os.path.join(d, f), ROOT) for f in files if f.endswith(".md")]
        return found


def main() -> int:
    # a whole path only: /work must not match inside src/worker.ts
    own = [re.compile(re.escape(p) + r"(?![\w.-])") for p in {ROOT, os.path.dirname(ROOT)} if p not in ("/", "")]
    problems = []
    for rel in markdown_files():
        path = os.path.join(ROOT, rel)
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                found = [m.group(0) for m in MACHINE.finditer(line)]
                found += [m.group(0) for o in own for m in o.finditer(line) if not any(m.group(0) in f for f in found)]
                problems += [f"{rel}:{n}: {f}" for f in found]
    if problems:
        print(
            "doc paths: build-machine paths in the docs (write them relative to the repository, e.g. .cache/..., ../shared/...):",
            file=sys.stderr,
        )
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
