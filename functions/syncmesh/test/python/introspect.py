"""A GraphQL client we did not write (graphql-core) against a running Syncmesh node.

Sends the standard introspection query (graphql-core's get_introspection_query, what GraphiQL,
Postman and graphql-codegen send first), builds the client schema from the answer, compares it
with the SDL the node serves for download, builds a query for every Query field it can ask
without required arguments (every leaf field selected, `limit: 2` on lists), validates that
query against the client schema and runs it. Prints one JSON object per schema on stdout.

    python introspect.py <node URL, e.g. http://127.0.0.1:8080/function/syncmesh-fn>
"""

import json
import sys
import urllib.request

from graphql import (
    Undefined,
    build_client_schema,
    build_schema,
    find_breaking_changes,
    find_dangerous_changes,
    get_introspection_query,
    get_named_type,
    is_leaf_type,
    is_non_null_type,
    is_object_type,
    parse,
    print_schema,
    validate,
)


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"content-type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=20) as res:
        return res.status, json.loads(res.read())


def get(url):
    with urllib.request.urlopen(url, timeout=20) as res:
        return res.status, res.headers.get("content-type"), res.read().decode()


def query_for(schema):
    """Every Query field without required arguments, each with every leaf field of its type."""
    fields = []
    for name, field in schema.query_type.fields.items():
        if any(is_non_null_type(arg.type) and arg.default_value is Undefined for arg in field.args.values()):
            continue
        args = "(limit: 2)" if "limit" in field.args else ""
        named = get_named_type(field.type)
        if is_leaf_type(named):
            fields.append(f"{name}{args}")
        elif is_object_type(named):
            leaves = [n for n, f in named.fields.items() if is_leaf_type(get_named_type(f.type))]
            fields.append(f"{name}{args} {{ {' '.join(leaves)} }}")
    return "query Generated { " + " ".join(fields) + " }"


def check(url, request_type, sdl_path):
    extra = {"request_type": request_type} if request_type else {}
    status, answer = post(url, {"query": get_introspection_query(descriptions=True), "operationName": "IntrospectionQuery", **extra})
    if status != 200 or answer.get("errors"):
        raise SystemExit(f"introspection refused: {status} {answer}")
    client_schema = build_client_schema(answer["data"])
    sdl_status, content_type, sdl = get(f"{url}{sdl_path}")
    downloaded = build_schema(sdl)
    query = query_for(client_schema)
    errors = validate(client_schema, parse(query))
    if errors:
        raise SystemExit(f"the generated query does not validate: {errors}")
    status, result = post(url, {"query": query, "operationName": "Generated", **extra})
    return {
        "request_type": request_type or "collect",
        "introspection_extensions": answer.get("extensions", {}),
        "types": sorted(t for t in client_schema.type_map if not t.startswith("__")),
        "sdl_status": sdl_status,
        "sdl_content_type": content_type,
        "sdl_matches": print_schema(client_schema) == print_schema(downloaded),
        "breaking": [c.description for c in find_breaking_changes(downloaded, client_schema)],
        "dangerous": [c.description for c in find_dangerous_changes(downloaded, client_schema)],
        "query": query,
        "status": status,
        "errors": result.get("errors"),
        "data": result.get("data"),
    }


def main():
    url = sys.argv[1].rstrip("/")
    out = [check(url, None, "/schema.graphql"), check(url, "meta", "/meta-schema.graphql")]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
