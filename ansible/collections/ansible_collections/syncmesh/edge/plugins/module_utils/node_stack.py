"""The one renderer of a Syncmesh Edge node's description (images/node/node.yml).

The description says once what a node runs: its services (faasd's docker-compose.yaml), its
functions (deployed through the gateway's /system/functions), the secrets and folders they use
and the inputs that differ per node (`${NAME}`). This module turns it into what faasd reads:

  compose(desc, values, overrides)  faasd's docker-compose.yaml, as text
  functions(desc, values)           the POST/PUT /system/functions bodies (OpenFaaS FunctionDeployment)
  secrets(desc), volumes(desc)      the files and folders a node needs, with owner and mode

Every consumer calls it: node-prepare.sh (the local faasd mesh and the appliance), the
appliance's boot program (import), the local mesh's deploy step (this file as a program) and the
Ansible roles (the filters in plugins/filter/node_stack.py). A `${NAME}` the description does not
declare under `inputs`, a value for a name it does not declare, and a used input without a value
are errors, everywhere: a typo must not deploy an empty or literal `${...}`.

Pure logic (PyYAML and the standard library, no Ansible imports), tested against the golden
rendering in images/node/golden/ by each consumer's tests.

    python3 node_stack.py compose   --description node.yml (--values FILE.json | --value NAME=VALUE)... [--override FILE.yml]...
    python3 node_stack.py functions --description node.yml (--values FILE.json | --value NAME=VALUE)...
    python3 node_stack.py secrets   --description node.yml    # one line a secret: name owner mode file-variable|- min-bytes
    python3 node_stack.py volumes   --description node.yml    # one line a folder: name owner mode
    python3 node_stack.py htpasswd  --user NAME < password    # the registry's htpasswd line (bcrypt)

`--description -` reads the description from stdin. Bad input: every problem on one line of stderr, exit 1.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys

try:
    import yaml
except ImportError:  # the controller and the nodes have PyYAML; ansible-test's import check runs without it
    yaml = None

# the header of every rendered compose file (the same bytes through every consumer)
COMPOSE_HEADER = (
    "# faasd's docker-compose.yaml of one Syncmesh Edge node, rendered from images/node/node.yml by\n"
    "# node_stack.py (the syncmesh.edge collection's module_utils): edit the description, not this file.\n"
)
PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
INPUT_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
# OpenFaaS's function and secret names (Kubernetes DNS-1123 labels)
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
QUANTITY = re.compile(r"^\d+(Ki|Mi|Gi|k|M|G|m)?$")
MODE = re.compile(r"^0[0-7]{3}$")
SECTIONS = ("inputs", "secrets", "volumes", "services", "functions")
SERVICE_KEYS = (
    "image",
    "user",
    "command",
    "entrypoint",
    "environment",
    "secrets",
    "volumes",
    "ports",
    "depends_on",
    "labels",
    "healthcheck",
    "restart",
    "cap_add",
)
FUNCTION_KEYS = ("image", "fprocess", "environment", "secrets", "labels", "annotations", "limits", "requests")
SECRET_KEYS = ("owner", "mode", "file", "min_bytes")
VOLUME_KEYS = ("owner", "mode")
# faasd fills this one itself (its own compose handling), so it stays as written
FAASD_PLACEHOLDERS = ("ARCH_SUFFIX",)


class NodeStackError(ValueError):
    """The description or the values are wrong; `problems` says each thing, with where."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


# ---------------------------------------------------------------------------------------------
# the description


def _yaml():
    """PyYAML, or a NodeStackError saying it is missing."""
    if yaml is None:
        raise NodeStackError(["PyYAML is needed to read and write node descriptions (Debian: python3-yaml)"])
    return yaml


def load(text: str) -> dict:
    """Parses and checks a description; every problem at once (NodeStackError)."""
    try:
        desc = _yaml().safe_load(text)
    except yaml.YAMLError as err:
        raise NodeStackError([f"the description is not YAML: {' '.join(str(err).split())}"]) from err
    if not isinstance(desc, dict):
        raise NodeStackError(["the description must be a mapping with inputs, secrets, volumes, services, functions"])
    problems: list[str] = []
    for key in desc:
        if key not in SECTIONS:
            problems.append(f"{key}: not a section of a node description (sections: {', '.join(SECTIONS)})")
    for key in SECTIONS:
        if not isinstance(desc.get(key) or {}, dict):
            problems.append(f"{key}: must be a mapping")
    if problems:
        raise NodeStackError(problems)
    desc = {key: desc.get(key) or {} for key in SECTIONS}
    for name, meaning in desc["inputs"].items():
        if not isinstance(name, str) or not INPUT_NAME.match(name):
            problems.append(f"inputs.{name}: an input's name is upper case letters, digits and _")
        if not isinstance(meaning, str) or not meaning.strip():
            problems.append(f"inputs.{name}: say what the input means (text)")
    for name, spec in desc["secrets"].items():
        problems += _check_file_spec(f"secrets.{name}", name, spec, SECRET_KEYS)
        if isinstance(spec, dict):
            if "file" in spec and (not isinstance(spec["file"], str) or not INPUT_NAME.match(spec["file"])):
                problems.append(f"secrets.{name}.file: the name of the variable that holds the file's path (upper case)")
            if "min_bytes" in spec and (not isinstance(spec["min_bytes"], int) or spec["min_bytes"] < 1):
                problems.append(f"secrets.{name}.min_bytes: a positive whole number")
    for name, spec in desc["volumes"].items():
        problems += _check_file_spec(f"volumes.{name}", name, spec, VOLUME_KEYS)
    for name, svc in desc["services"].items():
        problems += _check_service(desc, name, svc)
    for name, fn in desc["functions"].items():
        problems += _check_function(desc, name, fn)
    problems += [
        f"{where}: ${{{used}}} is not an input of the description (inputs: {', '.join(desc['inputs']) or 'none'})"
        for where, used in _placeholders(desc["services"], "services") + _placeholders(desc["functions"], "functions")
        if used not in desc["inputs"] and used not in FAASD_PLACEHOLDERS
    ]
    if problems:
        raise NodeStackError(problems)
    return desc


def load_file(path: str) -> dict:
    if path == "-":
        return load(sys.stdin.read())
    with open(path, encoding="utf-8") as f:
        return load(f.read())


def _check_file_spec(where: str, name, spec, keys: tuple) -> list[str]:
    problems = []
    if not isinstance(name, str) or not DNS_LABEL.match(name):
        problems.append(f"{where}: a name is a lowercase DNS label (a-z, 0-9, -)")
    if not isinstance(spec, dict):
        return problems + [f"{where}: a mapping with {', '.join(keys)}"]
    problems += [f"{where}.{k}: not allowed (allowed: {', '.join(keys)})" for k in spec if k not in keys]
    if not isinstance(spec.get("owner"), int) or isinstance(spec.get("owner"), bool) or spec["owner"] < 0:
        problems.append(f"{where}.owner: the uid (and gid) that owns it, a whole number")
    if not isinstance(spec.get("mode"), str) or not MODE.match(spec["mode"]):
        problems.append(f'{where}.mode: an octal mode as text, like "0400"')
    return problems


def _check_names(where: str, names, declared: dict, what: str) -> list[str]:
    if not isinstance(names, list):
        return [f"{where}: a list of {what} names"]
    return [
        f"{where}.{i}: '{n}' is not one of the description's {what} ({', '.join(declared) or 'none'})"
        for i, n in enumerate(names)
        if n not in declared
    ]


def _check_service(desc: dict, name, svc) -> list[str]:
    where = f"services.{name}"
    if not isinstance(svc, dict):
        return [f"{where}: a mapping (compose format)"]
    problems = [f"{where}.{k}: not allowed (allowed: {', '.join(SERVICE_KEYS)})" for k in svc if k not in SERVICE_KEYS]
    if not isinstance(svc.get("image"), str) or not svc["image"]:
        problems.append(f"{where}.image: required (an image reference)")
    if "secrets" in svc:
        problems += _check_names(f"{where}.secrets", svc["secrets"], desc["secrets"], "secrets")
    if "depends_on" in svc:
        problems += _check_names(f"{where}.depends_on", svc["depends_on"], desc["services"], "services")
    for i, vol in enumerate(svc.get("volumes") or []):
        if isinstance(vol, str):
            source, _colon, target = vol.partition(":")
            if source not in desc["volumes"] or not target.startswith("/"):
                problems.append(f"{where}.volumes.{i}: '{vol}': the short form is <a folder of volumes>:<absolute target>")
        elif not isinstance(vol, dict) or vol.get("type") != "bind":
            problems.append(f"{where}.volumes.{i}: a bind mount (type: bind, source, target) or <volume>:<target>")
    if "environment" in svc and not isinstance(svc["environment"], list | dict):
        problems.append(f"{where}.environment: a list of NAME=value or a mapping")
    return problems


def _check_function(desc: dict, name, fn) -> list[str]:
    where = f"functions.{name}"
    if not isinstance(name, str) or not DNS_LABEL.match(name):
        return [f"{where}: a function's name is a lowercase DNS label"]
    if not isinstance(fn, dict):
        return [f"{where}: a mapping (OpenFaaS stack format)"]
    problems = [f"{where}.{k}: not allowed (allowed: {', '.join(FUNCTION_KEYS)})" for k in fn if k not in FUNCTION_KEYS]
    if not isinstance(fn.get("image"), str) or not fn["image"]:
        problems.append(f"{where}.image: required (an image reference)")
    if "fprocess" in fn and not isinstance(fn["fprocess"], str):
        problems.append(f"{where}.fprocess: the command the watchdog starts (text)")
    secrets = fn.get("secrets") or []
    if not isinstance(secrets, list):
        problems.append(f"{where}.secrets: a list of secret names")
    else:
        for i, s in enumerate(secrets):
            if not isinstance(s, str) or not DNS_LABEL.match(s):
                problems.append(f"{where}.secrets.{i}: a lowercase DNS label (a-z, 0-9, -)")
            elif s not in desc["secrets"]:
                problems.append(
                    f"{where}.secrets.{i}: '{s}' is not one of the description's secrets ({', '.join(desc['secrets']) or 'none'})"
                )
    for key in ("environment", "labels", "annotations"):
        value = fn.get(key) or {}
        if not isinstance(value, dict):
            problems.append(f"{where}.{key}: a mapping")
            continue
        for k, v in value.items():
            if not isinstance(v, str | int | float) or (key != "environment" and not isinstance(v, str)):
                problems.append(f"{where}.{key}.{k}: {'text or a number' if key == 'environment' else 'text'}")
    for key in ("limits", "requests"):
        value = fn.get(key)
        if value is None:
            continue
        if not isinstance(value, dict):
            problems.append(f"{where}.{key}: a mapping with memory and/or cpu")
            continue
        for k, v in value.items():
            if k not in ("memory", "cpu"):
                problems.append(f"{where}.{key}.{k}: not allowed (allowed: memory, cpu)")
            elif not isinstance(v, str) or not QUANTITY.match(v):
                problems.append(f"{where}.{key}.{k}: a quantity like 128Mi or 500m")
    return problems


def _placeholders(node, where: str) -> list[tuple[str, str]]:
    """(where, name) of every ${name} in the values (keys may not hold one)."""
    found = []
    if isinstance(node, dict):
        for k, v in node.items():
            found += [(f"{where}.{k}", m) for m in PLACEHOLDER.findall(str(k))]
            found += _placeholders(v, f"{where}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += _placeholders(v, f"{where}.{i}")
    elif isinstance(node, str):
        found += [(where, m) for m in PLACEHOLDER.findall(node)]
    return found


# ---------------------------------------------------------------------------------------------
# values


def check_values(desc: dict, values: dict) -> dict:
    """The values as text; a name the description does not declare is an error."""
    problems = []
    out = {}
    for name, value in values.items():
        if name not in desc["inputs"]:
            problems.append(f"value {name}: not an input of the description (inputs: {', '.join(desc['inputs'])})")
        elif isinstance(value, bool) or not isinstance(value, str | int | float):
            problems.append(f"value {name}: text or a number, not {type(value).__name__}")
        else:
            out[name] = str(value)
    if problems:
        raise NodeStackError(problems)
    return out


def _fill(node, values: dict, inputs: dict, where: str, problems: list[str]):
    """`node` with every ${NAME} replaced by its value; a used input without a value is a problem."""
    if isinstance(node, dict):
        return {k: _fill(v, values, inputs, f"{where}.{k}", problems) for k, v in node.items()}
    if isinstance(node, list):
        return [_fill(v, values, inputs, f"{where}.{i}", problems) for i, v in enumerate(node)]
    if isinstance(node, str):

        def sub(m: re.Match) -> str:
            name = m.group(1)
            if name in FAASD_PLACEHOLDERS:
                return m.group(0)
            if name not in values:
                problems.append(f"{where}: needs ${{{name}}} ({inputs.get(name, 'an input')}), which has no value")
                return ""
            return values[name]

        return PLACEHOLDER.sub(sub, node)
    return node


def _filled(desc: dict, section: str, values: dict):
    problems: list[str] = []
    out = _fill(copy.deepcopy(desc[section]), check_values(desc, values), desc["inputs"], section, problems)
    if problems:
        raise NodeStackError(problems)
    return out


# ---------------------------------------------------------------------------------------------
# renderings


def merge(base, extra):
    """Maps merged recursively, anything else replaced (Ansible's combine(recursive=True))."""
    if isinstance(base, dict) and isinstance(extra, dict):
        out = dict(base)
        for k, v in extra.items():
            out[k] = merge(base[k], v) if k in base else copy.deepcopy(v)
        return out
    return copy.deepcopy(extra)


def compose_doc(desc: dict, values: dict, overrides: list | None = None) -> dict:
    """faasd's compose document: each service's `secrets` and short-form volumes become bind
    mounts below /var/lib/faasd, then `overrides` are merged in, in order."""
    services = {}
    for name, svc in _filled(desc, "services", values).items():
        mounts = [{"type": "bind", "source": f"./secrets/{s}", "target": f"/run/secrets/{s}"} for s in svc.get("secrets") or []]
        for vol in svc.get("volumes") or []:
            if isinstance(vol, str):
                source, _colon, target = vol.partition(":")
                vol = {"type": "bind", "source": f"./{source}", "target": target}
            mounts.append(vol)
        out = {}
        for key, value in svc.items():  # the description's order; the mounts where it lists the first of them
            if key not in ("secrets", "volumes"):
                out[key] = value
            elif "volumes" not in out:
                out["volumes"] = mounts
        services[name] = out
    doc = {"version": "3.7", "services": services}
    for i, extra in enumerate(overrides or []):
        if not isinstance(extra, dict):
            raise NodeStackError([f"override {i + 1}: a mapping (compose format), not {type(extra).__name__}"])
        doc = merge(doc, extra)
    return doc


def compose(desc: dict, values: dict, overrides: list | None = None) -> str:
    """faasd's docker-compose.yaml as text (see compose_doc)."""
    body = _yaml().safe_dump(
        compose_doc(desc, values, overrides), sort_keys=False, default_flow_style=False, width=4096, allow_unicode=True
    )
    return COMPOSE_HEADER + body


def functions(desc: dict, values: dict) -> list[dict]:
    """The /system/functions bodies (OpenFaaS FunctionDeployment), one per function. `fprocess`
    becomes envProcess when the description sets it (else the image's own fprocess runs)."""
    out = []
    for name, fn in _filled(desc, "functions", values).items():
        body = {"service": name, "image": fn["image"]}
        if fn.get("fprocess"):
            body["envProcess"] = fn["fprocess"]
        body["envVars"] = {k: str(v) for k, v in (fn.get("environment") or {}).items()}
        body["secrets"] = list(fn.get("secrets") or [])
        body["labels"] = dict(fn.get("labels") or {})
        body["annotations"] = dict(fn.get("annotations") or {})
        for key in ("limits", "requests"):
            if fn.get(key):
                body[key] = dict(fn[key])
        out.append(body)
    return out


def functions_json(bodies: list[dict]) -> str:
    """The functions as canonical JSON text (the golden rendering's form)."""
    return json.dumps(bodies, indent=2, sort_keys=True) + "\n"


def secrets(desc: dict) -> list[dict]:
    """Every secret: name, owner, mode, file (the variable naming the file that holds it, or None), min_bytes."""
    return [
        {"name": n, "owner": s["owner"], "mode": s["mode"], "file": s.get("file"), "min_bytes": s.get("min_bytes", 1)}
        for n, s in desc["secrets"].items()
    ]


def function_secrets(bodies: list[dict]) -> list[str]:
    """The secrets the functions read (faasd's secret store), each once, in order."""
    return list(dict.fromkeys(s for body in bodies for s in body["secrets"]))


def volumes(desc: dict) -> list[dict]:
    return [{"name": n, "owner": v["owner"], "mode": v["mode"]} for n, v in desc["volumes"].items()]


# ---------------------------------------------------------------------------------------------
# the program


# ---------------------------------------------------------------------------------------------
# the node registry's password file


def htpasswd_line(user: str, password: str, cost: int = 10) -> str:
    """`user:<bcrypt hash>` for the registry's htpasswd file (distribution accepts bcrypt only),
    hashed by the system's libxcrypt (libcrypt1, in every Debian), so no consumer needs
    apache2-utils or a Python bcrypt package."""
    import ctypes
    import ctypes.util

    if not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", user):
        raise NodeStackError([f"htpasswd: the user must be 1-64 letters, digits, . _ -, not {user!r}"])
    if not password or len(password.encode()) > 72 or "\n" in password:
        raise NodeStackError(["htpasswd: the password must be 1-72 bytes on one line (bcrypt's limit)"])
    lib = ctypes.CDLL(ctypes.util.find_library("crypt") or "libcrypt.so.1")
    lib.crypt_gensalt.restype = ctypes.c_char_p
    lib.crypt_gensalt.argtypes = (ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p, ctypes.c_int)
    lib.crypt.restype = ctypes.c_char_p
    lib.crypt.argtypes = (ctypes.c_char_p, ctypes.c_char_p)
    salt = lib.crypt_gensalt(b"$2b$", cost, None, 0)  # random bytes from the OS
    hashed = lib.crypt(password.encode(), salt) if salt else None
    if not hashed or not hashed.startswith(b"$2b$"):
        raise NodeStackError(["htpasswd: libcrypt cannot make a bcrypt hash here"])
    return f"{user}:{hashed.decode()}"


def _values(args) -> dict:
    values = {}
    for path in args.values or []:
        with open(path, encoding="utf-8") as f:
            values.update(json.load(f))
    for pair in args.value or []:
        name, sep, value = pair.partition("=")
        if not sep:
            raise NodeStackError([f"--value {pair}: NAME=VALUE"])
        values[name] = value
    return values


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="node_stack.py", description="Renders a Syncmesh Edge node description (images/node/node.yml).")
    parser.add_argument("what", choices=("compose", "functions", "secrets", "volumes", "htpasswd"))
    parser.add_argument("--description", help="the description (node.yml), - for stdin")
    parser.add_argument("--user", help="htpasswd: the user (the password comes on stdin)")
    parser.add_argument("--values", action="append", help="a JSON file of input values (repeatable)")
    parser.add_argument("--value", action="append", help="NAME=VALUE (repeatable, after --values)")
    parser.add_argument("--override", action="append", help="compose: a YAML file merged into the result (repeatable, in order)")
    args = parser.parse_args(argv)
    try:
        if args.what == "htpasswd":
            sys.stdout.write(htpasswd_line(args.user or "", sys.stdin.readline().rstrip("\n")) + "\n")
            return 0
        if not args.description:
            raise NodeStackError([f"{args.what} needs --description"])
        desc = load_file(args.description)
        if args.what == "compose":
            overrides = []
            for path in args.override or []:
                with open(path, encoding="utf-8") as f:
                    overrides.append(_yaml().safe_load(f) or {})
            sys.stdout.write(compose(desc, _values(args), overrides))
        elif args.what == "functions":
            sys.stdout.write(functions_json(functions(desc, _values(args))))
        elif args.what == "secrets":
            for s in secrets(desc):
                sys.stdout.write(f"{s['name']} {s['owner']} {s['mode']} {s['file'] or '-'} {s['min_bytes']}\n")
        else:
            for v in volumes(desc):
                sys.stdout.write(f"{v['name']} {v['owner']} {v['mode']}\n")
    except NodeStackError as err:
        sys.stderr.write(f"node_stack: {err}\n")  # every problem, on one line
        return 1
    except (OSError, ValueError) as err:
        sys.stderr.write(f"node_stack: {err}\n")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
