#!/usr/bin/env python3
"""Plots of the benchmarks (`make bench-*`), from the JSON they write (matplotlib from the
repo-local venv, `make scenarios-venv`). A bench draws its own through bench-kit's plotResults;
by hand:

    bench_plots.py function bench-results/function.json bench-results/function.png
    bench_plots.py mesh bench-results/mesh.json bench-results/mesh.png
    bench_plots.py replication bench-results/replication.json bench-results/replication.png
    bench_plots.py miso bench-results/miso.json bench-results/miso.png
    bench_plots.py coordination bench-results/coordination.json bench-results/coordination.png
    bench_plots.py allreduce bench-results/allreduce.json bench-results/allreduce.png
    bench_plots.py functions bench-results/functions.json bench-results/functions.png
    bench_plots.py listener bench-results/listener.json bench-results/listener.png
    bench_plots.py query-cost bench-results/query-cost-after.json bench-results/query-cost-after.png
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def save(fig, out, *title, **title_kw):
    """The title, a tight layout and the PNG: the end of every plot."""
    fig.suptitle(*title, **title_kw)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def plot_mesh(data, out):
    rows = data["rows"]
    queries = [q for q in ("aggregate", "collect", "estimate") if any(r["query"] == q for r in rows)]
    fig, axes = plt.subplots(1, len(queries), figsize=(5 * len(queries), 4), squeeze=False)
    for ax, q in zip(axes[0], queries, strict=True):
        for mode, style in (("sequential", "o--"), ("parallel", "s-"), ("local", "^:")):
            pts = sorted((r["nodes"], r["stats"]["median_ms"]) for r in rows if r["query"] == q and r["mode"] == mode)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=mode)
        ax.set_title(q)
        ax.set_xlabel("nodes")
        ax.set_ylabel("median round trip (ms)")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    save(fig, out, f"bench-mesh: round trip through node-1, latency profile {data.get('latency', '?')}")


def plot_replication(data, out):
    rows = data["rows"]
    targets = data.get("targets", {})
    labels = [f"{r['subscribers']} subscriber{'s' if r['subscribers'] != 1 else ''}" for r in rows]
    fig, (lat, thr, cpu, upd) = plt.subplots(1, 4, figsize=(19, 4.5))
    x = range(len(rows))
    lat.bar([i - 0.2 for i in x], [r["latency"]["p50_ms"] for r in rows], width=0.4, label="p50")
    lat.bar([i + 0.2 for i in x], [r["latency"]["p99_ms"] for r in rows], width=0.4, label="p99")
    if "p50_ms_5" in targets:
        lat.axhline(targets["p50_ms_5"], color="red", linestyle="--", label=f"p50 target {targets['p50_ms_5']} ms (5 subscribers)")
    lat.set_xticks(list(x), labels)
    lat.set_ylabel("insert on node-1 -> replica readable (ms)")
    lat.legend(fontsize=8)
    names = [f"burst, {lbl}" for lbl in labels]
    values = [r["events_per_s"] for r in rows]
    if data.get("resync"):
        names.append("resync, 1 subscriber")
        values.append(data["resync"]["readings_per_s"])
    thr.bar(range(len(values)), values, width=0.5)
    if "events_per_s_5" in targets:
        thr.axhline(targets["events_per_s_5"], color="red", linestyle="--", label=f"target {targets['events_per_s_5']:,} readings/s")
    thr.set_xticks(list(range(len(values))), names, fontsize=8)
    thr.set_ylabel(f"readings/s (burst of {rows[0]['burst_readings']:,})")
    thr.legend(fontsize=8)
    groups = sorted({g for r in rows for g in r.get("burst_cpu_ms_per_reading", {}) if g != "machine"})
    bottoms = [0.0] * len(rows)
    for g in groups:
        vals = [r.get("burst_cpu_ms_per_reading", {}).get(g, 0) for r in rows]
        cpu.bar(list(x), vals, width=0.5, bottom=bottoms, label=g)
        bottoms = [b + v for b, v in zip(bottoms, vals, strict=True)]
    if groups:
        cpu.plot(list(x), [r["burst_cpu_ms_per_reading"].get("machine", 0) for r in rows], "k_", markersize=30, label="whole machine")
        cpu.set_xticks(list(x), labels)
        cpu.set_ylabel("CPU ms per reading (burst)")
        cpu.legend(fontsize=7)
    else:
        cpu.set_axis_off()
    update = data.get("update")
    if update:
        upd.bar([0], [update["ms"]], width=0.5, color="tab:red" if update["resync"] else "tab:green")
        upd.set_xticks([0], [f"{update['subscribers']} subscribers, origin of {update['origin_readings']:,}"], fontsize=8)
        upd.set_ylabel("update on node-1 -> on every subscriber (ms)")
        upd.set_title("with a resync" if update["resync"] else "no resync", fontsize=9)
    else:
        upd.set_axis_off()
    load = data.get("host", {}).get("load_average", [])
    load_text = f", load {load[0]:.1f}" if load else ""
    command = data.get("command", "make bench-replication")
    save(fig, out, f"bench-replication (6-node mesh, no emulated latency{load_text})\n{command}", fontsize=10)


def plot_function(data, out):
    rows = data["rows"]
    paths = data.get("paths", ["direct", "process"])
    cases = [r["case"] for r in rows]
    x = range(len(rows))
    width = 0.8 / len(paths)
    fig, (lat, thr) = plt.subplots(1, 2, figsize=(12, 4.5))
    for k, p in enumerate(paths):
        offs = [i - 0.4 + width * (k + 0.5) for i in x]
        lat.bar(offs, [r.get(f"{p}_p50_ms", 0) for r in rows], width=width, label=p)
        thr.bar(offs, [r.get(f"{p}_rps", 0) for r in rows], width=width, label=p)
    lat.set_xticks(list(x), cases)
    lat.set_ylabel("p50 latency (ms)")
    lat.legend(fontsize=8)
    thr.set_xticks(list(x), cases)
    thr.set_ylabel("requests/s")
    thr.legend(fontsize=8)
    label = f" ({data['label']})" if data.get("label") else ""
    save(
        fig,
        out,
        f"bench-function{label}: {data.get('concurrency', '?')} concurrent clients, {data.get('readings', '?')} readings, "
        f"{data.get('rounds', 1)} rounds x {data.get('seconds_per_round', '?')} s per path, order rotated",
    )


def plot_miso(data, out):
    panels = [k for k in ("replication", "table1", "allreduce") if data.get(k)]
    fig, axes = plt.subplots(1, max(1, len(panels)), figsize=(5 * max(1, len(panels)), 4), squeeze=False)
    for ax, key in zip(axes[0], panels, strict=False):
        d = data[key]
        if key == "replication":
            peers = sorted(int(k) for k in d)
            ax.plot(peers, [d[str(p)]["sendMedianMs"] for p in peers], "s-", label="ours: send (MISO's definition)")
            ax.plot(peers, [d[str(p)]["medianMs"] for p in peers], "o--", label="ours: until every peer acked")
            ax.plot(peers, [d[str(p)]["misoMs"] for p in peers], "^:", label="MISO paper")
            ax.set_xlabel("peers")
            ax.set_ylabel("replication time, median (ms)")
            ax.set_yscale("log")
            ax.set_title("replication time")
        elif key == "table1":
            intervals = sorted(int(k) for k in d)
            xs = [str(i) for i in intervals]
            ax.bar(xs, [d[str(i)]["opsPerS"] for i in intervals], label="ops/s")
            ax.set_xlabel("debounce interval (ms)")
            ax.set_ylabel("ops/s")
            twin = ax.twinx()
            twin.plot(xs, [d[str(i)]["bytesPerOp"] for i in intervals], "ro-", label="replication bytes/op")
            twin.set_ylabel("bytes per op")
            twin.set_yscale("log")
            ax.set_title("MISO Table I")
        else:
            names = ["MISO, 10 clients", "Redis, 10 conns", "MISO, 1 shared", "Redis, 1 pipelined"]
            vals = [d["misoMeanMs"], d["redisMeanMs"], d.get("sharedMisoMeanMs"), d.get("sharedRedisMeanMs")]
            pairs = [(n, v) for n, v in zip(names, vals, strict=True) if v is not None]
            ax.bar([p[0] for p in pairs], [p[1] for p in pairs], color=["C0", "C3", "C0", "C3"][: len(pairs)])
            ax.set_ylabel("AllReduce round, mean (ms)")
            ax.tick_params(axis="x", labelrotation=20)
            ax.set_title("AllReduce vs Redis")
        if key != "allreduce":
            ax.legend(loc="best", fontsize=8)
    save(fig, out, "bench-miso")


def plot_coordination(data, out):
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    kinds = [("counter", "Counter"), ("atomic_long", "AtomicLong")]
    wheres = [("one_node", "1 server"), ("three_nodes", "3 servers")]
    xs = [f"{label}\n{wl}" for _, label in kinds for _, wl in wheres]
    rates = [data[k][w]["ops_per_s"] for k, _ in kinds for w, _ in wheres]
    axes[0].bar(xs, rates, color=["C0", "C0", "C1", "C1"])
    axes[0].set_ylabel("increments/s")
    axes[0].tick_params(axis="x", labelsize=8)
    axes[0].set_title("throughput")
    width = 0.35
    idx = range(len(xs))
    axes[1].bar([i - width / 2 for i in idx], [data[k][w]["latency_ms"]["p50"] for k, _ in kinds for w, _ in wheres], width, label="p50")
    axes[1].bar([i + width / 2 for i in idx], [data[k][w]["latency_ms"]["p99"] for k, _ in kinds for w, _ in wheres], width, label="p99")
    axes[1].set_xticks(list(idx), xs, fontsize=8)
    axes[1].set_ylabel("latency (ms)")
    axes[1].set_title("latency")
    axes[1].legend()
    parties = sorted(data["barrier"], key=int)
    axes[2].bar([f"{p} parties" for p in parties], [data["barrier"][p]["round_ms"]["p50"] for p in parties], label="p50")
    axes[2].plot([f"{p} parties" for p in parties], [data["barrier"][p]["round_ms"]["p99"] for p in parties], "ro", label="p99")
    axes[2].set_ylabel("round time (ms)")
    axes[2].set_title("CyclicBarrier round")
    axes[2].legend()
    save(
        fig,
        out,
        f"bench-coordination: 3 nats-server, R3; {data['params']['clients']} clients on 1 or spread over 3 servers"
        " (Counter: server-side add; AtomicLong: compare-and-set)",
    )


def plot_allreduce(data, out):
    rows = data["rows"]
    fig, (bars, rounds) = plt.subplots(1, 2, figsize=(11, 4))
    names = [r["system"] for r in rows]
    means = [r["total_ms"]["mean"] for r in rows]
    lo = [r["total_ms"]["mean"] - r["total_ms"]["min"] for r in rows]
    hi = [r["total_ms"]["max"] - r["total_ms"]["mean"] for r in rows]
    bars.bar(names, means, yerr=[lo, hi], capsize=4, color=["C0", "C3", "C1"][: len(rows)])
    for i, r in enumerate(rows):
        if "miso_over_redis" in r:
            bars.annotate(f"MISO = {r['miso_over_redis'] * 100:.0f} %", (i, means[i]), ha="center", va="bottom", fontsize=8)
    miso = rows[0]["total_ms"]["mean"]
    bars.axhline(miso / data["target_ratio"], color="grey", linestyle=":", label="Redis time at which MISO is 73 % (target)")
    bars.set_ylabel("AllReduce round, mean (ms; bars: min-max)")
    bars.legend(fontsize=8)
    for r in rows:
        rounds.plot(range(1, len(r["rounds_ms"]) + 1), r["rounds_ms"], "o-", label=r["system"])
    rounds.set_xlabel("round")
    rounds.set_ylabel("total time (ms)")
    rounds.legend(fontsize=8)
    p = data["params"]
    save(
        fig,
        out,
        f"bench-allreduce: {p['nodes']} nodes ({p['latency']}), {p['chunks']} chunks, {p['concurrency_per_node']} invocations per node; "
        f"load {data['host']['load_average'][0]:.1f}",
    )


def plot_listener(data, out):
    lat, thr = data["latency"], data["throughput"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    a.bar(["p50", "p90", "p99", "max"], [lat["p50_ms"], lat.get("p90_ms", 0), lat["p99_ms"], lat["max_ms"]])
    a.set_ylabel("insert -> delivered (ms)")
    a.set_title(f"{lat['count']} inserts at {lat['rate']}/s")
    b.bar(["server inserts", "delivered"], [thr["insert_events_per_s"], thr["delivered_events_per_s"]])
    b.set_ylabel("events/s")
    b.set_title(f"a burst of {thr['events']} events")
    save(fig, out, f"bench-listener (database: {data.get('server', '?')}); load {data['host']['load_average'][0]:.1f}")


def plot_query_cost(data, out):
    rows = data["rows"]
    names = [r["attack"] for r in rows]
    fig, axes = plt.subplots(1, 3, figsize=(15, 0.45 * len(rows) + 1.5), sharey=True)
    for ax, key, label in zip(
        axes, ("cpu_ms", "ms", "rss_peak_mb"), ("function CPU (ms)", "time around the request (ms)", "peak RSS (MB)"), strict=True
    ):
        ax.barh(names, [r[key] for r in rows])
        ax.set_xlabel(label)
    axes[0].invert_yaxis()
    load = data["host"]["load_average"][0]
    save(fig, out, f"bench-query-cost ({data['name']}: {data['main']}), {data['readings']} readings; load {load:.1f}")


def plot_functions(data, out):
    runs = data["deploy"]["runs"]
    nodes = [r["node"] for r in data["registry"]]
    fig, (dep, reg, cnt) = plt.subplots(1, 3, figsize=(15, 4.2))
    width = 0.8 / len(nodes)
    for j, node in enumerate(nodes):
        xs = [i + (j - (len(nodes) - 1) / 2) * width for i in range(len(runs))]
        dep.bar(xs, [r["ready_ms"][node] / 1000 for r in runs], width, label=f"{node} ready")
    dep.plot(range(len(runs)), [r["push_ms"] / 1000 for r in runs], "k_", markersize=18, label="pushed to node-1")
    dep.set_xticks(range(len(runs)))
    dep.set_xticklabels([f"{r['function']}{' (cold)' if r['cold'] else ''}" for r in runs], rotation=20, fontsize=7)
    dep.set_ylabel("s from the start of the push")
    dep.set_title("push on node-1 -> ready on every node", fontsize=9)
    dep.legend(fontsize=7, loc="lower right")
    mb = 1024 * 1024
    xs = range(len(nodes))
    reg.bar([x - 0.2 for x in xs], [r["idle_pss_bytes"] / mb for r in data["registry"]], 0.4, label="PSS idle")
    reg.bar([x + 0.2 for x in xs], [r["mirror_peak_pss_bytes"] / mb for r in data["registry"]], 0.4, label="PSS, peak during the mirror")
    for x, r in enumerate(data["registry"]):
        top = r["mirror_peak_pss_bytes"] / mb
        reg.annotate(f"disk {r['disk_after_bytes'] / mb:.0f} MB", (x, top), ha="center", va="bottom", fontsize=7)
    reg.set_xticks(list(xs))
    reg.set_xticklabels(nodes)
    reg.set_ylabel("MB")
    reg.margins(y=0.25)
    reg.set_title(f"registry per node (disk after {data['functions_in_registries']} functions)", fontsize=9)
    reg.legend(fontsize=7)
    c = data["counter"]
    cnt.plot(range(1, len(c["rounds_ms"]) + 1), c["rounds_ms"], "o-", markersize=3, label="every node reads the sum")
    cnt.axhline(c["converge_ms"]["p50"], color="grey", linestyle=":", label=f"p50 {c['converge_ms']['p50']:.0f} ms")
    cnt.axhline(c["converge_ms"]["p99"], color="C3", linestyle=":", label=f"p99 {c['converge_ms']['p99']:.0f} ms")
    cnt.set_xlabel("round (+1, +2, +3 at once on node-1..3)")
    cnt.set_ylabel("ms")
    cnt.set_title(f"miso-counter convergence; agent bytes/round p50 {c['agent_bytes_per_round']['p50']:.0f}", fontsize=9)
    cnt.legend(fontsize=7)
    p = data["params"]
    fig.suptitle(f"bench-functions: {p['nodes']} faasd nodes ({p['latency']}); load {data['host']['load_average'][0]:.1f}")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


PLOTS = {
    "function": plot_function,
    "mesh": plot_mesh,
    "replication": plot_replication,
    "miso": plot_miso,
    "coordination": plot_coordination,
    "allreduce": plot_allreduce,
    "functions": plot_functions,
    "listener": plot_listener,
    "query-cost": plot_query_cost,
}


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in PLOTS:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    kind, src, out = sys.argv[1:]
    with open(src) as f:
        data = json.load(f)
    PLOTS[kind](data, out)
    print(f"plot written to {out}")


if __name__ == "__main__":
    main()
