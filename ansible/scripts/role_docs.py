#!/usr/bin/env python3
"""Writes each role's variables table into its README from meta/argument_specs.yml (the one source).

    role_docs.py          rewrite the tables between the markers
    role_docs.py --check  fail (exit 1) when a README's table differs from its argument spec

The table sits between <!-- BEGIN_ROLE_VARIABLES --> and <!-- END_ROLE_VARIABLES -->; never edit
it by hand. One table per entry point (main first).
"""

from __future__ import annotations

import pathlib
import re
import sys

import yaml

ROLES = pathlib.Path(__file__).resolve().parents[1] / "collections/ansible_collections/syncmesh/edge/roles"
BEGIN, END = "<!-- BEGIN_ROLE_VARIABLES -->", "<!-- END_ROLE_VARIABLES -->"


def cell(text) -> str:
    if isinstance(text, list):
        text = " ".join(text)
    text = re.sub(r"\b[COV]\(([^)]*)\)", r"`\1`", " ".join(str(text).split()))  # Ansible doc markup
    return text.replace("|", "\\|")


def default_of(opt: dict) -> str:
    if "default" not in opt:
        return "required" if opt.get("required") else "–"
    value = opt["default"]
    rendered = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
    if rendered.endswith("\n..."):
        rendered = rendered[:-4].strip()
    rendered = rendered.removesuffix("...").strip()
    return "`" + rendered.replace("|", "\\|") + "`"


def type_of(opt: dict) -> str:
    t = opt.get("type", "str")
    if t == "list" and "elements" in opt:
        t = f"list of {opt['elements']}"
    if "choices" in opt:
        t += " (" + ", ".join(f"`{c}`" for c in opt["choices"]) + ")"
    return t


def table(specs: dict) -> str:
    out = []
    for entry in sorted(specs, key=lambda e: (e != "main", e)):
        spec = specs[entry]
        out.append(f"Entry point `{entry}`: {cell(spec.get('short_description', ''))}")
        out.append("")
        options = spec.get("options") or {}
        if not options:
            out.append("No variables.")
        else:
            out.append("| variable | type | default | description |")
            out.append("| --- | --- | --- | --- |")
            for name in sorted(options):
                opt = options[name]
                out.append(f"| `{name}` | {type_of(opt)} | {default_of(opt)} | {cell(opt.get('description', ''))} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def main(check: bool) -> int:
    stale = []
    for role in sorted(p for p in ROLES.iterdir() if p.is_dir()):
        specs = yaml.safe_load((role / "meta/argument_specs.yml").read_text())["argument_specs"]
        for entry, spec in specs.items():
            for name, opt in (spec.get("options") or {}).items():
                if "type" not in opt or "description" not in opt:
                    stale.append(f"{role.name}: {entry}.{name} needs a type and a description")
        readme = role / "README.md"
        text = readme.read_text()
        if BEGIN not in text or END not in text:
            stale.append(f"{readme}: no {BEGIN} ... {END} markers")
            continue
        head, rest = text.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        new = f"{head}{BEGIN}\n{table(specs)}{END}{tail}"
        if new != text:
            if check:
                stale.append(f"{readme}: variables table is out of date (run make ansible-docs)")
            else:
                readme.write_text(new)
                print(f"wrote {readme.relative_to(ROLES.parents[4])}")
    for line in stale:
        print(line, file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main("--check" in sys.argv[1:]))
