"""MkDocs hook: puts the component READMEs into the site as reference pages.

The READMEs stay where they are (beside the code, the one place they are edited); at build
time each becomes docs page ``reference/components/<name>.md``. Their relative links are
rewritten: a link to another included README or to a page under docs/ points at that page; a
link to any other repository file becomes its repository path in code font (the site does not
serve source files). ``mkdocs build --strict`` then checks the READMEs' links and anchors too.
"""

import logging
import os
import posixpath
import re

from mkdocs.structure.files import File

# repository path -> page name under reference/components/
READMES = {
    "functions/syncmesh/README.md": "syncmesh-function",
    "functions/miso-counter/README.md": "miso-counter",
    "template/README.md": "templates",
    "listeners/README.md": "listener",
    "miso-agent/README.md": "miso-agent",
    "miso-agent/INTERNALS.md": "miso-agent-internals",
    "miso-agent/sdk/README.md": "miso-sdk",
    "coordination/README.md": "coordination",
    "coordination/sdk/README.md": "coordination-sdk",
    "scenarios/mesh/README.md": "mesh",
    "cli/README.md": "cli",
    "scenarios/measure/README.md": "scenarios",
    "scenarios/k6/README.md": "k6",
    "tools/mongo-test-server/README.md": "mongo-test-server",
    "lib/bench-kit/README.md": "bench-kit",
    "DEVELOPERS.md": "developers",
    "images/appliance/README.md": "appliance",
    "images/appliance/pi/README.md": "appliance-pi",
}

# A warning on an mkdocs logger counts in --strict, so a README link to a missing file fails the build.
log = logging.getLogger("mkdocs.hooks.readmes")
REPO = None

LINK = re.compile(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)", re.MULTILINE)


def page_uri(repo_path):
    return f"reference/components/{READMES[repo_path]}.md"


def rewrite_link(match, readme, own_uri):
    text, target = match.group(1), match.group(2)
    if re.match(r"^[a-z]+:", target) or target.startswith("#"):
        return match.group(0)
    path, _, anchor = target.partition("#")
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(readme), path))
    suffix = f"#{anchor}" if anchor else ""
    if resolved in READMES:
        rel = posixpath.relpath(page_uri(resolved), posixpath.dirname(own_uri))
        return f"[{text}]({rel}{suffix})"
    if resolved.startswith("docs/") and resolved.endswith(".md"):
        rel = posixpath.relpath(resolved[len("docs/") :], posixpath.dirname(own_uri))
        return f"[{text}]({rel}{suffix})"
    if not os.path.exists(os.path.join(REPO, resolved)):
        log.warning(f"{readme}: link to {target}, but {resolved} does not exist")
    if text.strip("`") == path or text.strip("`") == resolved:
        return f"`{resolved}`"
    return f"{text} (`{resolved}`)"


def rewrite(markdown, readme, own_uri):
    # Leave fenced code blocks alone: only the text between fences is markdown.
    parts = re.split(r"(^```.*?^```[^\n]*$)", markdown, flags=re.MULTILINE | re.DOTALL)
    out = []
    for i, part in enumerate(parts):
        out.append(part if i % 2 else LINK.sub(lambda m: rewrite_link(m, readme, own_uri), part))
    return "".join(out)


def on_files(files, config):
    global REPO
    repo = REPO = os.path.dirname(config["config_file_path"])
    for readme in READMES:
        with open(os.path.join(repo, readme), encoding="utf-8") as f:
            content = f.read()
        uri = page_uri(readme)
        files.append(File.generated(config, uri, content=rewrite(content, readme, uri)))
    return files
