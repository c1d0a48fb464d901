"""Pictures of matrices: the heatmap topics' images and the demo's figure (matplotlib)."""

from __future__ import annotations

import numpy as np

from ..compiled import kernel


BOUNDARY = (90, 90, 90)
"""Grey of the frame and of the lines between the blocks [z_H | z_s | z_v | z_r]."""


def state_block_boundaries(model) -> tuple[int, ...]:
    """Indices where the blocks z_H, z_s, z_v, z_r (fixed base: z_s, z_r) of A's rows
    and columns start, after the first."""
    n = model.n_joints
    return (6, 6 + n, 12 + n) if model.floating_base else (n,)


def heatmap_rgb(matrix: np.ndarray, cell: int = 0, row_blocks=(), col_blocks=()) -> np.ndarray:
    """(H, W, 3) uint8 picture of a matrix: red positive, blue negative, white
    zero, on a log scale spanning 8 decades below the largest |entry|, so both
    the big and the small couplings stay visible.  Each entry is a cell×cell block
    (cell 0: chosen to make the long side at least 400 px).  A grey frame, and grey
    lines before the rows row_blocks and the columns col_blocks (the state blocks).
    Painted by a compiled, GIL-free kernel: the node draws it beside its input thread."""
    m = np.ascontiguousarray(matrix, dtype=float)
    cell = cell or max(1, -(-400 // max(1, max(m.shape))))  # ceil: at least 400 px along the long side
    framed = np.empty((m.shape[0] * cell + 2, m.shape[1] * cell + 2, 3), dtype=np.uint8)
    lines = lambda blocks: np.array([b for b in blocks], dtype=np.int64)  # noqa: E731
    _paint_into(m, cell, lines(row_blocks), lines(col_blocks), np.array(BOUNDARY, dtype=np.uint8), framed)
    return framed


@kernel
def _paint_into(m, cell, row_blocks, col_blocks, boundary, out):
    """heatmap_rgb's pixels into out ((R·cell + 2, C·cell + 2, 3))."""
    peak = 0.0
    for x in m.ravel():
        peak = max(peak, abs(x))
    for c in range(3):
        out[:, :, c] = boundary[c]
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            x = m[i, j]
            fade = 255
            if x != 0.0 and peak > 0.0:
                level = min(1.0, max(0.0, (np.log10(abs(x) / peak) + 8.0) / 8.0))
                fade = int(255 * (1.0 - level))
            red, green, blue = (255, fade, fade) if x > 0.0 else ((fade, fade, 255) if x < 0.0 else (255, 255, 255))
            for a in range(1 + i * cell, 1 + (i + 1) * cell):
                for b in range(1 + j * cell, 1 + (j + 1) * cell):
                    out[a, b, 0], out[a, b, 1], out[a, b, 2] = red, green, blue
    if cell >= 3:  # lines inside the cells' first pixel row/column, so no entry is hidden
        for k in row_blocks:
            if 0 < k < m.shape[0]:
                for c in range(3):
                    out[1 + k * cell, 1:-1, c] = boundary[c]
        for k in col_blocks:
            if 0 < k < m.shape[1]:
                for c in range(3):
                    out[1:-1, 1 + k * cell, c] = boundary[c]


def signed_log_scale(matrix: np.ndarray, decades: float = 8.0):
    """(values in [−1, 1], peak): sign(x)·(log10(|x|/peak) + decades)/decades, 0 for
    entries more than ``decades`` below the largest |entry| (peak) and for zeros."""
    m = np.asarray(matrix, dtype=float)
    peak = float(np.abs(m).max(initial=0.0))
    if peak == 0.0:
        return np.zeros_like(m), 0.0
    with np.errstate(divide="ignore"):
        level = np.clip((np.log10(np.abs(m) / peak) + decades) / decades, 0.0, 1.0)
    return np.where(m != 0, np.sign(m) * level, 0.0), peak


def write_linearization_figure(path, A: np.ndarray, B: np.ndarray, model, title: str = ""):
    """A and B side by side as a person reads them (matplotlib, PNG): titles, the
    state labels (H:x … r:<joint>) on both axes, lines between the blocks
    [z_H | z_s | z_v | z_r], a colour bar of the signed log scale.  Returns the Figure."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    labels, blocks = list(model.state_labels), state_block_boundaries(model)
    n_rows = len(labels)
    figure = Figure(figsize=(14, 7.5), dpi=100, layout="constrained")
    axes = figure.subplots(1, 2, width_ratios=[A.shape[1], max(B.shape[1], 4)])
    scaled_A, peak_A = signed_log_scale(A)
    scaled_B, peak_B = signed_log_scale(B)
    font = max(3.0, min(8.0, 400.0 / max(n_rows, 1)))
    drawn = []  # the matrices' images (the colour bar is the last one's: both have its scale)
    for ax, scaled, peak, name in ((axes[0], scaled_A, peak_A, "A"), (axes[1], scaled_B, peak_B, "B")):
        if scaled.size == 0:  # a robot without joints (a quadrotor): B has no columns
            ax.set_title(f"{name} ({scaled.shape[0]}×{scaled.shape[1]}): no joints, no inputs", fontsize=10)
            ax.set_axis_off()
            continue
        drawn.append(ax.imshow(scaled, cmap="RdBu_r", vmin=-1.0, vmax=1.0, interpolation="nearest", aspect="auto"))
        rows, cols = scaled.shape
        ax.set_title(f"{name} ({rows}×{cols}), largest |entry| {peak:.3g}", fontsize=10)
        ax.set_yticks(range(rows), labels, fontsize=font)
        for b in blocks:
            ax.axhline(b - 0.5, color="0.35", linewidth=0.8)
        if name == "A":
            ax.set_xticks(range(cols), labels, fontsize=font, rotation=90)
            ax.set_xlabel("state perturbation z = [z_H | z_s | z_v | z_r]", fontsize=9)
            for b in blocks:
                ax.axvline(b - 0.5, color="0.35", linewidth=0.8)
        else:
            ax.set_xticks(range(cols), [f"τ:{j}" for j in model.joint_names], fontsize=font, rotation=90)
            ax.set_xlabel("input w = δτ (joint torques)", fontsize=9)
        ax.set_ylabel("ż rows", fontsize=9)
    bar = figure.colorbar(drawn[-1], ax=list(axes), shrink=0.8)
    bar.set_ticks([-1.0, -0.5, 0.0, 0.5, 1.0],
                  labels=["−largest", "−1e-4·largest", "0 (or < 1e-8·largest)", "+1e-4·largest", "+largest"])
    bar.set_label("sign · log10 |entry| over 8 decades below the largest (each matrix its own)", fontsize=9)
    figure.suptitle(title or f"geometric linearization ż = A z + B w of '{model.name}'", fontsize=12)
    figure.savefig(path)
    return figure


def write_touchdown_figure(path, model, touchdown, times, states, title: str = ""):
    """One touchdown of a simulated gait (matplotlib, PNG): left, the height and the vertical
    velocity of the feet around it (``states`` at ``times`` [s], the pre-impact state at the
    touchdown instant; the post-impact one, touchdown.impact.state, is drawn there too, so the
    jump shows); right, the impulses Λ on the robot at each foot and ∂ν⁺/∂z⁻, the velocity rows
    of A_impact (docs/impacts.md), on the signed log scale of the other figure.  Returns the Figure.

    touchdown: a simulation.Touchdown (time, impact, previous_contacts)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    from .simulation import frame_motion

    jump = touchdown.impact
    feet = [c.frame for c in jump.contacts]
    landing = [f for f in feet if f not in {c.frame for c in touchdown.previous_contacts}]
    motion = [frame_motion(model, state, feet) for state in states]
    heights = np.array([p[:, 2] for p, _ in motion])
    speeds = np.array([v[:, 2] for _, v in motion])
    after = frame_motion(model, jump.state, feet)[1][:, 2]
    times = np.asarray(times)

    figure = Figure(figsize=(14, 8), dpi=100, layout="constrained")
    grid = figure.add_gridspec(2, 2, width_ratios=[1.0, 1.25])
    ax_height, ax_speed = figure.add_subplot(grid[0, 0]), figure.add_subplot(grid[1, 0])
    ax_impulse, ax_map = figure.add_subplot(grid[0, 1]), figure.add_subplot(grid[1, 1])
    for k, foot in enumerate(feet):
        style = dict(linewidth=2.0) if foot in landing else dict(linewidth=1.0, linestyle="--", alpha=0.7)
        ax_height.plot(times, heights[:, k] * 100.0, label=foot + (" (touches down)" if foot in landing else ""),
                       **style)
        line, = ax_speed.plot(times, speeds[:, k], **style)
        if foot in landing:  # the jump: ν⁻ → ν⁺ at the touchdown instant
            before = speeds[np.abs(times - touchdown.time).argmin(), k]
            ax_speed.plot([touchdown.time, touchdown.time], [before, after[k]], color=line.get_color(),
                          linewidth=2.0, marker="o", markersize=4)
    for ax in (ax_height, ax_speed):
        ax.axvline(touchdown.time, color="0.3", linewidth=0.8, linestyle=":")
        ax.grid(alpha=0.3)
    ax_height.axhline(0.0, color="0.45", linewidth=1.5)  # the ground the simulation walks on, z = 0
    ax_height.set_ylabel("foot height above the ground, z = 0 [cm]")
    ax_height.set_title(f"touchdown at t = {touchdown.time:.3f} s: the swung feet close their contacts "
                        "on the ground", fontsize=10)
    ax_height.legend(fontsize=8)
    ax_speed.set_ylabel("vertical foot velocity [m/s]")
    ax_speed.set_xlabel("time [s]")
    ax_speed.set_title("the impact stops them at once: J ν⁺ = 0 (restitution "
                       f"{jump.restitution:g})", fontsize=10)

    impulses = jump.impulses.reshape(len(feet), -1)
    width = 0.8 / impulses.shape[1]
    for c in range(impulses.shape[1]):
        ax_impulse.bar(np.arange(len(feet)) + (c - (impulses.shape[1] - 1) / 2) * width, impulses[:, c], width,
                       label=("Λx", "Λy", "Λz", "Λmx", "Λmy", "Λmz")[c])
    ax_impulse.axhline(0.0, color="0.3", linewidth=0.8)
    ax_impulse.set_xticks(range(len(feet)), [f + (" ▼" if f in landing else "") for f in feet], fontsize=8)
    ax_impulse.set_ylabel("impulse on the robot [N·s], world axes")
    ax_impulse.set_title("impulses Λ on the whole new set (▼: the feet touching down)", fontsize=10)
    ax_impulse.legend(fontsize=8)
    ax_impulse.grid(alpha=0.3, axis="y")

    N = model.n_velocities
    labels = list(model.state_labels)
    scaled, peak = signed_log_scale(jump.A[N:])
    image = ax_map.imshow(scaled, cmap="RdBu_r", vmin=-1.0, vmax=1.0, interpolation="nearest", aspect="auto")
    font = max(3.0, min(7.0, 300.0 / max(N, 1)))
    ax_map.set_yticks(range(N), labels[N:], fontsize=font)
    ax_map.set_xticks(range(2 * N), labels, fontsize=font, rotation=90)
    for b in state_block_boundaries(model):
        ax_map.axvline(b - 0.5, color="0.35", linewidth=0.8)
    for b in state_block_boundaries(model)[2:]:
        ax_map.axhline(b - N - 0.5, color="0.35", linewidth=0.8)
    ax_map.set_title(f"A_impact's velocity rows ∂ν⁺/∂z⁻ ({N}×{2 * N}; its position rows are [I 0]), largest "
                     f"|entry| {peak:.3g}", fontsize=10)
    ax_map.set_xlabel("pre-impact perturbation z⁻ = [z_H | z_s | z_v | z_r]", fontsize=9)
    bar = figure.colorbar(image, ax=ax_map, shrink=0.8)
    bar.set_ticks([-1.0, 0.0, 1.0], labels=["−largest", "0", "+largest"])
    bar.set_label("sign · log10 |entry| over 8 decades", fontsize=8)
    figure.suptitle(title or f"a touchdown of '{model.name}'", fontsize=12)
    figure.savefig(path)
    return figure
