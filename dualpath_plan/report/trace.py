"""``trace import`` and ``trace stats``: the import's report, a trace's statistics next to Table 2's rows, and the
histograms of ``trace stats --plot``."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from dualpath_plan.model.fmt import fmt
from dualpath_plan.model.profiles import Workload
from dualpath_plan.model.trace.convert import Report
from dualpath_plan.model.trace.ops import TraceSummary


def import_json(report: Report) -> dict:
    return report.as_dict()


def render_import(report: Report, console: Console) -> None:
    console.print(f"wrote {report.output} (schema v2)", highlight=False)
    for line in report.lines():
        console.print(f"  {line}", highlight=False)


TABLE2 = ("agentic-32k", "agentic-48k", "agentic-64k")  # the paper's rows, shipped as workload profiles


def table2_rows() -> list[Workload]:
    from dualpath_plan.model.profiles import catalog

    cat = catalog()
    return [cat.get("workload", name) for name in TABLE2]


def stats_json(summary: TraceSummary, table2: list[Workload] | None = None) -> dict:
    rows = table2_rows() if table2 is None else table2
    return summary.as_dict() | {"table2_rows": [_row(w) for w in rows]}


def _row(w: Workload) -> dict:
    return {"workload": w.name, "turns": w.turns, "append_tokens": w.append_tokens, "gen_tokens": w.gen_tokens,
            "total_tokens": w.total_tokens, "context_tokens": w.context_tokens}


def render_stats(summary: TraceSummary, table2: list[Workload], console: Console) -> None:
    """The counts, the distributions, and Table 2's columns for the trace beside the paper's rows."""
    d = summary.as_dict()
    span = d["span_s"]
    console.print(f"{_n(summary.report.files, 'file')} read as {summary.report.format}: {_n(d['sessions'], 'session')}, "
                  f"{_n(d['rounds'], 'round')} ({fmt(d['mean_rounds_per_session'], '')} per session); {_n(d['forks'], 'fork')}, "
                  f"{_n(d['compactions'], 'compaction')}, {_n(d['shared_prefix_sessions'], 'session')} with a shared prefix "
                  f"({_n(d['shared_prefix_ids'], 'id')}); {d['sessions_with_start_s']:,} with a start time"
                  + (f", their starts spanning {fmt(span, 's')}" if span else ""), highlight=False)
    console.print(f"hit share {fmt(d['hit_share'], '%')} of prompt tokens: {fmt(d['hit_share_within_sessions'], '%')} within sessions, "
                  f"{fmt(d['hit_share_across_sessions'], '%')} across (shared prefixes and forks)", highlight=False)
    if summary.kv_bytes_per_token is not None:
        console.print(f"KV a turn reads with {summary.model}: {fmt(d['kv_bytes_per_turn'], 'B')} "
                      f"({fmt(summary.kv_bytes_per_token, 'B')} per token)", highlight=False)
    dist = Table(title="Per round (tool time: between rounds)")
    for col in ("quantity", "mean", "p50", "p90", "p99", "max"):
        dist.add_column(col, justify="left" if col == "quantity" else "right")
    for key, label, unit in (("context_tokens", "context (hit)", "tokens"), ("append_tokens", "append (miss)", "tokens"),
                             ("gen_tokens", "generated", "tokens"), ("prompt_tokens", "prompt", "tokens"), ("tool_s", "tool time", "s")):
        s = d["distributions"][key]
        if s is None:
            dist.add_row(label, "none", "", "", "", "")
            continue
        dist.add_row(label, *("0 s" if unit == "s" and s[k] == 0 else fmt(s[k], unit) for k in ("mean", "p50", "p90", "p99", "max")))
    console.print(dist)
    t = Table(title="Table 2's columns, computed as the paper's", caption="turns: per session; append/turn and gen/turn: the mean over "
              "sessions of each one's mean per turn; total: what a session holds at its end, the mean over sessions; context: the mean "
              "over turns", caption_justify="left")
    for col in ("data set", "turns", "append/turn", "gen/turn", "total", "context"):
        t.add_column(col, justify="left" if col == "data set" else "right")
    t2 = d["table2"]
    t.add_row("this trace", fmt(t2["turns"], ""), fmt(t2["append_tokens"], "tokens"), fmt(t2["gen_tokens"], "tokens"),
              fmt(t2["total_tokens"], "tokens"), fmt(t2["context_tokens"], "tokens"))
    for w in table2:
        t.add_row(f"{w.name} (paper)", fmt(w.turns, ""), fmt(w.append_tokens, "tokens"), fmt(w.gen_tokens, "tokens"),
                  fmt(w.total_tokens, "tokens"), fmt(w.context_tokens, "tokens"))
    console.print(t)


def _n(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def stats_figure(summary: TraceSummary):
    """Four panels: the distributions of context, append, generated tokens and tool time (log-spaced bins)."""
    from dualpath_plan.report.plots import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    st = summary.stats
    for ax, hist, label in zip(axes, (st.context, st.append, st.gen, st.tool),
                               ("context (hit) tokens per round", "appended tokens per round", "generated tokens per round",
                                "tool time between rounds, s")):
        edges, counts = _coarse(hist)
        if counts.sum():
            ax.stairs(counts, edges, fill=True, alpha=0.7)
            ax.set_xscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel("rounds")
    fig.suptitle(f"{summary.report.format} trace: {st.sessions:,} sessions, {st.rounds:,} rounds")
    fig.tight_layout()
    return fig


def _coarse(hist, per_decade: int = 20):
    """The histogram merged into ``per_decade`` bins per decade for the picture, over the span it has counts in."""
    import numpy as np

    nonzero = np.flatnonzero(hist.counts[1:]) + 1  # the zero bin is not drawn on a log axis
    if not nonzero.size:
        return hist.edges[1:3], np.zeros(1)
    step = max(1, (hist.edges.size - 2) // int(round(np.log10(hist.edges[-1] / hist.edges[1]) * per_decade)))
    lo, hi = nonzero[0] - (nonzero[0] - 1) % step, nonzero[-1] + 1
    edges = hist.edges[lo:hi + step:step]
    counts = np.add.reduceat(hist.counts[lo:lo + (edges.size - 1) * step], np.arange(0, (edges.size - 1) * step, step))
    return edges, counts
