#!/usr/bin/env python3
"""Writes the Inputs/Outputs tables of each module README (terraform/modules/*/README.md) from its
variables.tf and outputs.tf, between the markers <!-- BEGIN_TF_DOCS --> and <!-- END_TF_DOCS -->.

    python3 terraform/hack/module_docs.py           rewrite the tables
    python3 terraform/hack/module_docs.py --check   exit 1 when a table is stale
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1] / "modules"
BLOCK = re.compile(r'^(variable|output) "([^"]+)" \{\n(.*?)^\}', re.S | re.M)


def attr(body: str, name: str) -> str | None:
    m = re.search(rf'^  {name}\s+=\s+(.*)$', body, re.M)
    return m.group(1).strip() if m else None


def cell(text: str | None) -> str:
    if text is None:
        return ""
    if text.startswith('"') and text.endswith('"'):
        text = text[1:-1].replace('\\"', '"')
    return text.replace("|", "\\|")


def tables(module: pathlib.Path) -> str:
    out = ["## Inputs", "", "| name | type | default | description |", "| --- | --- | --- | --- |"]
    for _kind, name, body in BLOCK.findall((module / "variables.tf").read_text()):
        typ = attr(body, "type") or ""
        if typ.endswith("({") or typ.endswith("(object({"):
            typ = typ.split("(")[0] + "(object)"
        default = attr(body, "default")
        shown = f"`{cell(default)}`" if default is not None else "required"
        out.append(f"| `{name}` | `{cell(typ)}` | {shown} | {cell(attr(body, 'description'))} |")
    out += ["", "## Outputs", "", "| name | description |", "| --- | --- |"]
    for _kind, name, body in BLOCK.findall((module / "outputs.tf").read_text()):
        out.append(f"| `{name}` | {cell(attr(body, 'description'))} |")
    return "\n".join(out) + "\n"


stale = []
for module in sorted(p for p in ROOT.iterdir() if (p / "variables.tf").exists()):
    readme = module / "README.md"
    empty = f"# {module.name}\n\n<!-- BEGIN_TF_DOCS -->\n<!-- END_TF_DOCS -->\n"
    text = readme.read_text() if readme.exists() else empty
    block = f"<!-- BEGIN_TF_DOCS -->\n{tables(module)}<!-- END_TF_DOCS -->"
    new = re.sub(r"<!-- BEGIN_TF_DOCS -->.*<!-- END_TF_DOCS -->", lambda _, b=block: b, text, flags=re.S)
    if new != text:
        stale.append(str(readme))
        if "--check" not in sys.argv:
            readme.write_text(new)
if "--check" in sys.argv and stale:
    sys.exit("stale module README tables (python3 terraform/hack/module_docs.py): " + ", ".join(stale))
