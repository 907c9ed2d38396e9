"""PNG figures of a report: per-depth hit rate and triplet recall (one panel per level, one
line per method) and the ablation bars (the full method beside each ablation, per level)."""

from __future__ import annotations

from pathlib import Path

from adapath.eval.summary import LEVEL_ORDER

_COLORS = ("#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb", "#000000",
           "#ee7733", "#009988", "#cc3311")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _levels(present) -> list[str]:
    present = list(dict.fromkeys(present))
    return [lv for lv in LEVEL_ORDER if lv in present] + [lv for lv in present if lv not in LEVEL_ORDER]


def depth_plot(methods: dict[str, dict], key: str, ylabel: str, title: str, path: Path) -> Path | None:
    """``key`` is ``hit_rate`` or ``recall``; methods without values are left out."""
    series = {name: m[f"{key}_by_level_depth"] for name, m in methods.items() if m.get(f"{key}_by_level_depth")}
    if not series:
        return None
    levels = _levels(level for values in series.values() for level in values)
    depths = sorted({int(d) for values in series.values() for v in values.values() for d in v})
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(levels), figsize=(3.4 * len(levels) + 0.6, 3.6), sharey=True, squeeze=False)
    names = list(methods)
    for ax, level in zip(axes[0], levels):
        for name, values in series.items():
            points = values.get(level, {})
            if not points:
                continue
            i = names.index(name) % len(_COLORS)
            xs = sorted(points, key=int)
            ax.plot([int(d) for d in xs], [points[d] for d in xs], marker=_MARKERS[i], color=_COLORS[i],
                    linewidth=1.8, markersize=5, label=name)
        ax.set_title(level, fontsize=10)
        ax.set_xticks(depths)
        ax.set_xlabel("depth")
        ax.set_ylim(-3, 103)
        ax.grid(axis="y", color="#dddddd", linewidth=0.6)
        ax.spines[["top", "right"]].set_visible(False)
    axes[0][0].set_ylabel(ylabel)
    handles, labels = axes[0][0].get_legend_handles_labels()
    for ax in axes[0][1:]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.suptitle(title, fontsize=11)
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 4), frameon=False, fontsize=8.5)
    rows = (len(labels) + 3) // 4
    fig.tight_layout(rect=(0, 0.03 + 0.05 * rows, 1, 1))
    return _save(fig, path)


def ablation_plot(methods: dict[str, dict], path: Path) -> Path | None:
    """Grouped bars: per level (and Overall) the full method (first) beside each ablation,
    strict EM with its value on top of each bar."""
    methods = {n: m for n, m in methods.items() if m.get("cells")}
    if not methods:
        return None
    levels = _levels(level for m in methods.values() for level in m["cells"])
    groups = [(level, [m["cells"].get(level, {}).get("overall_strict") for m in methods.values()]) for level in levels]
    if len(levels) > 1:
        groups.append(("Overall", [(m.get("overall") or {}).get("strict") for m in methods.values()]))
    plt = _pyplot()
    width = 0.8 / len(methods)
    fig, ax = plt.subplots(figsize=(max(5.0, 1.1 + len(groups) * (0.55 + 0.42 * len(methods))), 3.9))
    for i, name in enumerate(methods):
        xs = [g + (i - (len(methods) - 1) / 2) * width for g in range(len(groups))]
        values = [vals[i] for _, vals in groups]
        bars = ax.bar([x for x, v in zip(xs, values) if v is not None], [v for v in values if v is not None],
                      width * 0.92, color=_COLORS[i % len(_COLORS)], label=name)
        ax.bar_label(bars, fmt="%.1f", fontsize=7.5, padding=2)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([g for g, _ in groups])
    ax.set_ylabel("exact match, strict (%)")
    ax.set_ylim(0, 112)
    ax.set_yticks(range(0, 101, 20))
    ax.grid(axis="y", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_title("Ablations: full method beside each ablation", fontsize=11)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=min(len(methods), 3), frameon=False, fontsize=8.5)
    fig.tight_layout()
    return _save(fig, path)


def _save(fig, path: Path) -> Path:
    plt = _pyplot()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path
