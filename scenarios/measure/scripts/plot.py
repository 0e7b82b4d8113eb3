"""Plots of one scenarios run: traffic and round trip per system against node count.

usage: plot.py RESULTS_JSON OUT_DIR   (prints the PNG file names it wrote, one per line)

Called by the report step (scenarios/measure/src/report.ts) with the repo-local venv's python
(.cache/venv, matplotlib pinned by the Makefile).
"""

import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"baseline": "#c0392b", "syncmesh": "#2471a3"}


def series(cells, workload, days, requests, system, value):
    pts = sorted(
        (c["nodes"], value(c))
        for c in cells
        if c["workload"] == workload and c["days"] == days and c["requests"] == requests and c["system"] == system
    )
    return [p[0] for p in pts], [p[1] for p in pts]


def combos(cells):
    return sorted({(c["workload"], c["days"], c["requests"]) for c in cells}, key=lambda k: (k[0], k[1], k[2]))


def grid(n):
    cols = min(n, 2)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6 * cols, 4.2 * rows), squeeze=False)
    return fig, [ax for row in axes for ax in row]


def finish_axes(ax, cells, title, ylabel, legend_size=None):
    ax.set_xticks(sorted({c["nodes"] for c in cells}))
    ax.set_title(title)
    ax.set_xlabel("nodes")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=legend_size)


def save_grid(fig, axes, used, title, out, name):
    """Blanks the grid's unused panels, titles the figure, writes OUT/NAME and returns NAME."""
    for ax in axes[used:]:
        ax.axis("off")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(os.path.join(out, name), dpi=110)
    plt.close(fig)
    return name


def plot_traffic(cells, meta, out):
    keys = combos(cells)
    fig, axes = grid(len(keys))
    for ax, (w, d, r) in zip(axes, keys, strict=False):
        for system in ("baseline", "syncmesh"):
            x, y = series(cells, w, d, r, system, lambda c: c["traffic"]["total_bytes"] / 1e6)
            if x:
                ax.plot(x, y, marker="o", color=COLORS[system], label=system)
                for xi, yi in zip(x, y, strict=True):
                    ax.annotate(f"{yi:.2f}", (xi, yi), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=7)
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        finish_axes(ax, cells, f"{w}, {d} d, {r} requests", "traffic MB (log)")
    title = f"Traffic on the mesh network per system (run {meta['run']}, {meta['latency']})"
    return save_grid(fig, axes, len(keys), title, out, "traffic.png")


def plot_rtt(cells, meta, out):
    keys = combos(cells)
    fig, axes = grid(len(keys))
    for ax, (w, d, r) in zip(axes, keys, strict=False):
        for system in ("baseline", "syncmesh"):
            x, p50 = series(cells, w, d, r, system, lambda c: c["rtt_ms"]["p50"])
            if not x:
                continue
            _, p95 = series(cells, w, d, r, system, lambda c: c["rtt_ms"]["p95"])
            _, db = series(
                cells,
                w,
                d,
                r,
                system,
                lambda c: max((c["db_ms"]["entry"] or {}).get("p50", 0), (c["db_ms"]["slowest_peer"] or {}).get("p50", 0)),
            )
            up = [max(0.0, b - a) for a, b in zip(p50, p95, strict=True)]
            ax.errorbar(
                x, p50, yerr=[[0.0] * len(x), up], marker="o", capsize=4, color=COLORS[system], label=f"{system} RTT p50 (bar: p95)"
            )
            ax.plot(x, db, marker="x", linestyle="--", color=COLORS[system], label=f"{system} database p50")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        finish_axes(ax, cells, f"{w}, {d} d, {r} requests", "ms", legend_size=7)
    title = f"Round trip (k6) and database time per system (run {meta['run']}, {meta['latency']})"
    return save_grid(fig, axes, len(keys), title, out, "rtt.png")


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        doc = json.load(f)
    cells = doc["cells"]
    if not cells:
        print("plot.py: results have no cells", file=sys.stderr)
        return 1
    for name in (plot_traffic(cells, doc["meta"], argv[2]), plot_rtt(cells, doc["meta"], argv[2])):
        print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
