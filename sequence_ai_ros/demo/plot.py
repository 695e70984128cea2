"""
An episode's picture: per run, joints, task distance and chunk latency on one time axis.

The demo draws its episodes with it, and `sequence-ai-ros report` any recorded episode's.
"""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
import numpy as np
from sequence_ai_ros.world.arm_model import HOVER_Z, tool_position

from . import analysis

ARM = analysis.ARM_JOINTS
UNDERRUN = '#d62728'
HOLD = '#9467bd'
SEAM = '0.45'
LEAD_S = 0.5  # model seconds shown before the first action: the arm at rest
# The panels a run may have, their heights (relative) and their axes' labels.
PANEL_HEIGHT = {'joints': 3.0, 'distance': 1.3, 'latency': 1.3}
PANEL_LABEL = {'joints': 'joint position (rad)', 'distance': 'tool to target (cm)',
               'latency': 'chunk latency (s)'}


def render(runs: Sequence[Any], path: Path, *, title: str, scale: float,
           chunk_s: float | None, join: str, target: Sequence[float] | None) -> None:
    """
    Draw each run as a column of panels and write a PNG to `path`.

    A run is a summary.Run or anything with its label, data and final_distance. The joints are
    always drawn; the tool's distance to `target` (the (x, y) the simulated arm reaches for)
    only with a target, and the chunks' latency only when a run has chunks (an exported
    episode has none): a panel without data is left out. `chunk_s` is the seconds one chunk
    covers.
    """
    panels = panels_for(runs, target)
    ratios = [PANEL_HEIGHT[panel] for panel in panels]
    width, single = 7.5 * len(runs), len(runs) == 1
    height = 9.0 * (sum(ratios) + 0.9) / (sum(PANEL_HEIGHT.values()) + 0.9)
    fig = Figure(figsize=(width, height), dpi=110)
    # Margins in inches, set by hand: the layout engines and outside legends of newer
    # matplotlib are missing from Jammy's (3.5), which a Humble machine has.
    fig.subplots_adjust(left=0.8 / width, right=1 - 0.15 / width,
                        top=1 - (0.95 if single else 0.75) / height,
                        bottom=(1.15 if single else 0.95) / height, hspace=0.12, wspace=0.04)
    axes = fig.subplots(len(panels), len(runs), sharex=True, sharey='row', squeeze=False,
                        gridspec_kw={'height_ratios': ratios})
    end = max(_end(run, scale) for run in runs)
    for column, run in enumerate(runs):
        _draw_run(dict(zip(panels, axes[:, column])), run, scale, chunk_s, join, target)
        axes[-1, column].set_xlabel('time since the first action (model s)')
        axes[0, column].set_xlim(-LEAD_S, end)
    for row, panel in enumerate(panels):
        axes[row, 0].set_ylabel(PANEL_LABEL[panel])
    fig.suptitle(title.replace(', ', ',\n', 1) if single else title)
    arm = max(run.data.arm_joints for run in runs)
    fig.legend(handles=_legend(arm), loc='lower center', ncol=5 if single else 13,
               fontsize='small', frameon=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)


def panels_for(runs: Sequence[Any], target: Sequence[float] | None) -> list[str]:
    """Return the panels the runs have data for: joints, then distance and latency if any."""
    return ['joints'] + (['distance'] if target is not None else []) + \
        (['latency'] if any(run.data.chunks for run in runs) else [])


def _end(run: Any, scale: float) -> float:
    data, played = run.data, analysis.actions(run.data)
    if not played:
        return 1.0
    last = data.outcome_time or played[-1][0]
    return (last - played[0][0]) / scale + LEAD_S


def _draw_run(panels: dict[str, Any], run: Any, scale: float, chunk_s: float | None, join: str,
              target: Sequence[float] | None) -> None:
    axes = list(panels.values())
    joints_ax = panels['joints']
    data = run.data
    arm = data.arm_joints
    played = analysis.actions(data)
    t0 = played[0][0] if played else 0.0

    def model_s(times: Any) -> np.ndarray:
        return (np.asarray(times, dtype=float) - t0) / scale

    for start, stop in analysis.underruns(data):
        for ax in axes:
            ax.axvspan(model_s(start), model_s(stop), color=UNDERRUN, alpha=0.15, lw=0)
    seams = analysis.seams(data, join)
    for seam in seams:
        for ax in axes:
            ax.axvline(float(model_s(seam.time)), color=SEAM, lw=0.6, ls=':')

    colors = [f'C{j % 10}' for j in range(arm)]
    if data.joint_states:
        measured = np.array([p[:arm] for _, p in data.joint_states])
        times = model_s([t for t, _ in data.joint_states])
        keep = times >= -LEAD_S
        for j in range(min(arm, measured.shape[1])):
            joints_ax.plot(times[keep], measured[keep, j], color=colors[j], lw=1.4)
    if played:
        commanded = np.array([p[:arm] for _, p in played])
        times = model_s([t for t, _ in played])
        for j in range(commanded.shape[1]):
            joints_ax.plot(times, commanded[:, j], color=colors[j], lw=1.0, ls=(0, (3, 2)))
        marks = [seam.index for seam in seams]
        joints_ax.plot(np.repeat(times[marks], commanded.shape[1]), commanded[marks].ravel(),
                       'k|', ms=7)
    if data.command_units:
        joints_ax.annotate(f'commanded: {data.command_units}', xy=(0.01, 0.01),
                           xycoords='axes fraction', fontsize='small', color='0.3')
    for when, _ in data.holds:
        joints_ax.plot(float(model_s(when)), 1.0, 'v', color=HOLD, ms=7,
                       transform=joints_ax.get_xaxis_transform(), clip_on=False)
    joints_ax.set_title(_headline(run, scale), fontsize='medium')
    joints_ax.grid(alpha=0.3)

    if 'distance' in panels:
        _draw_distance(panels['distance'], run, model_s, target)
    if 'latency' in panels:
        _draw_latency(panels['latency'], data, model_s, scale, chunk_s)


def _draw_distance(distance_ax: Any, run: Any, model_s: Any,
                   target: Sequence[float] | None) -> None:
    data = run.data
    if data.joint_states and target is not None and data.arm_joints == ARM:
        # From the measured joints (100 Hz) rather than the sim's 10 Hz topic: the same number.
        hover = np.array([target[0], target[1], HOVER_Z])
        times = model_s([t for t, _ in data.joint_states])
        shown = np.nonzero(times >= -LEAD_S)[0]
        distance = [100.0 * np.linalg.norm(tool_position(data.joint_states[i][1][:ARM]) - hover)
                    for i in shown]
        distance_ax.plot(times[shown], distance, color='k', lw=1.4)
    if run.final_distance is not None:
        distance_ax.annotate(f'final {100 * run.final_distance:.1f} cm', xy=(1.0, 1.0),
                             xycoords='axes fraction', ha='right', va='top',
                             fontsize='small')
    distance_ax.set_ylim(bottom=0.0)
    distance_ax.grid(alpha=0.3)


def _draw_latency(latency_ax: Any, data: Any, model_s: Any, scale: float,
                  chunk_s: float | None) -> None:
    if data.chunks:
        arrivals = model_s([t for t, _ in data.chunks])
        latency = np.array([e.get('latency_s') or 0.0 for _, e in data.chunks]) / scale
        latency_ax.vlines(arrivals, 0.0, latency, color='C0', lw=2.0)
        latency_ax.plot(arrivals, latency, 'o', color='C0', ms=4)
    if chunk_s is not None:
        latency_ax.axhline(chunk_s, color='k', lw=0.8, ls='--')
        latency_ax.annotate(f'one chunk: {chunk_s:.2f} s', xy=(0.0, chunk_s),
                            xycoords=('axes fraction', 'data'), xytext=(3, 3),
                            textcoords='offset points', fontsize='small')
    latency_ax.set_ylim(bottom=0.0)
    latency_ax.grid(alpha=0.3)


def _headline(run: Any, scale: float) -> str:
    outcome = run.data.outcome or {}
    moving = outcome.get('moving_fraction')
    moving_text = 'n/a' if moving is None else f'{100 * moving:.0f}%'
    holds = f', {len(run.data.holds)} holds' if run.data.holds else ''
    return (f'{run.label}: {outcome.get("actions", 0)} actions, {outcome.get("chunks", 0)} '
            f'chunks, {outcome.get("underruns", 0)} underruns{holds}, moving {moving_text}')


def _legend(arm: int) -> list[Any]:
    handles: list[Any] = [
        Line2D([], [], color='0.3', lw=1.4, label='measured'),
        Line2D([], [], color='0.3', lw=1.0, ls=(0, (3, 2)), label='commanded'),
        Line2D([], [], color=SEAM, lw=0.6, ls=':', label='seam: the next chunk starts'),
        Line2D([], [], color='k', marker='|', ls='', ms=7, label='command at a seam'),
        Patch(color=UNDERRUN, alpha=0.15, label='underrun (holding)'),
        Line2D([], [], color=HOLD, marker='v', ls='', ms=7, label='hold'),
    ]
    handles += [Line2D([], [], color=f'C{j % 10}', lw=2.0, label=f'joint {j + 1}')
                for j in range(arm)]
    return handles
