"""The task grid of a chained GEMM launch (clnn/chain.py): how its row blocks and column panels
are cut into tasks, so that the work-groups end the launch together.

A chained GEMM's tasks are R ranges of its row blocks (dimension 0) times C ranges of its
column panels (dimensions 1-2), task ``r * C + c``; work-group ``v`` of ``O`` owns the
``v``-th contiguous block of the tasks and then takes what is left of the others' blocks
(chain.py's ``clnn_run``). A launch ends when its last task does, so a grid whose tasks are
unequal (7 row blocks cut into 3 and 4, 6 panels into 1, 2, 1, 2) leaves one work-group waiting
for the other at the end of the launch. The grid of before, C = min(tasks per unit, panels)
and as many row ranges as the tasks allow (:func:`rows_first_grid`), is kept unless another
grid of at most as many tasks, and at least two a unit where the grid of before has as many,
ends the launch sooner in :func:`makespan`'s model (work-groups of equal speed, a task's cost
its row blocks times its panels); among those that do, the one of most row ranges (a
work-group keeps the same rows of the image from launch to launch), then most tasks (a
work-group held up leaves less to wait for).

    grid(g0, panels, per_unit, units) -> (row ranges, column ranges)
"""

from __future__ import annotations


def rows_first_grid(g0: int, panels: int, per_unit: int, units: int) -> tuple[int, int]:
    """The grid of before: at most ``per_unit`` column ranges, the rest row ranges."""
    cols = max(1, min(per_unit, panels))
    return max(1, min(g0, units * (per_unit // cols))), cols


def _sizes(n: int, parts: int) -> list[int]:
    """The sizes of ``parts`` ranges of ``n`` cut as the chain cuts them (n * k // parts)."""
    return [n * (k + 1) // parts - n * k // parts for k in range(parts)]


def makespan(g0: int, panels: int, rows: int, cols: int, units: int) -> int:
    """The launch's end, in row block x panel units, on ``units`` work-groups of equal speed
    that run their own block of the tasks first and then claim the others' in turn."""
    costs = [r * c for r in _sizes(g0, rows) for c in _sizes(panels, cols)]
    n = len(costs)
    blocks = [[n * v // units, n * (v + 1) // units] for v in range(units)]
    clock = [0] * units
    active = list(range(units))
    while active:
        w = min(active, key=lambda u: (clock[u], u))
        for k in range(units):
            block = blocks[(w + k) % units]
            if block[0] < block[1]:
                clock[w] += costs[block[0]]
                block[0] += 1
                break
        else:
            active.remove(w)
    return max(clock)


def grid(g0: int, panels: int, per_unit: int, units: int) -> tuple[int, int]:
    """(row ranges, column ranges) of a chained GEMM launch of ``g0`` row blocks and
    ``panels`` column panels, at most ``per_unit`` tasks per unit on ``units`` units (see the
    module's docstring)."""
    base = rows_first_grid(g0, panels, per_unit, units)
    if units < 2:
        return base
    cap = max(base[0] * base[1], 1)
    least = min(cap, 2 * units)
    best = min(((makespan(g0, panels, rows, cols, units), -rows, -rows * cols, (rows, cols))
                for cols in range(1, min(panels, cap) + 1)
                for rows in range(1, min(g0, cap // cols) + 1) if rows * cols >= least),
               default=(makespan(g0, panels, *base, units), 0, 0, base))
    return best[3] if best[0] < makespan(g0, panels, *base, units) else base
