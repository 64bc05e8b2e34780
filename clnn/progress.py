"""Listeners of the compile work of a prepare: a program built, a kernel launched for the first
time at the warm-up (clnn.prepared_model.ClPreparedModel.warm_up). The tools draw a progress
bar from them (clnn/tools/first_result.py); nothing listens by default."""

from __future__ import annotations

#: callables ``(stage, done, total)``: stage "build" (total None: programs are built as the
#: plans ask for them) or "warm_up" (done of total first launches)
listeners: list = []


def notify(stage: str, done: int, total: int | None = None):
    for listener in list(listeners):
        listener(stage, done, total)
