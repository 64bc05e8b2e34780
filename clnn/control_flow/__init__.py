"""IF and WHILE on the OpenCL device.

A supported IF / WHILE is a partition of its own (clnn/plan.py ``partition``). Its referenced
subgraphs are planned as the main one is: partitions, one plan per input-shape signature (so
shapes that change across iterations get plans of their own), constants in a buffer of their
own, and IF / WHILE inside them run the same way (recursively). Only the condition is read back
(one byte per IF, one per WHILE iteration, and those of iterations run ahead); the tensors
passed to and from the subgraphs stay in device memory (:class:`clnn.memory.PoolTensor`).

A subgraph's outputs are read from pool bytes that no run overwrites while they are read. A
WHILE body has two runs with pools of their own (:class:`SubgraphRun` ``copy``; a small body
RUNS) that take turns: each iteration's outputs are handed to the next as regions of the pools
they are in (OpenCL sub-buffers, which the next run's kernels read directly: nothing is copied
per iteration), and the run that reads them writes other pools. A loop whose body can be
dropped unseen runs ahead of its conditions (:func:`_run_ahead`): bodies enqueued before the
host has read the condition that decides them, so the device works while the host waits for
a read and wakes up (each read is a round trip to the device: on PoCL ~30-55 us, three times
a 512x512 ADD; benchmarks/condition_read.py). The outputs of a subgraph run
at most once per execution (an IF's branch in the main subgraph, a WHILE's last iteration:
:func:`reruns`) stay in its pools too; those of a subgraph run again while they are read (two
IFs naming one branch, a loop inside a loop's body) are copied on the device into buffers of
their own when it returns (``detached``).

The loop timeout and the deadline hold as on the reference device
(hal/operations/control_flow.py): the condition runs, then a loop past the execution's loop
timeout (LOOP_TIMEOUT_DEFAULT_NS when the execution gives none) fails with
MISSED_DEADLINE_TRANSIENT, and the execution deadline is checked between partitions.

The modules: :mod:`.subgraphs` (the subgraphs' runs, planned and run), :mod:`.scalars` (their
scalar operations on the host), :mod:`.run` (IF and WHILE in an execution) and
:mod:`.host_loops` (loops the host drives, their gate and replayed runs).
"""

from clnn.control_flow.host_loops import GATE_ITERATIONS, Gate, Replay
from clnn.control_flow.run import loop_input_on_device, run_control
from clnn.control_flow.scalars import HOST_SCALAR_BYTES, ScalarOp, host_scalar_ops
from clnn.control_flow.subgraphs import (
                                         RUN_AHEAD_BYTES,
                                         RUNS,
                                         SUBGRAPH_INPUTS,
                                         SubgraphRun,
                                         body_runs,
                                         plan_ahead,
                                         referenced,
                                         reruns,
                                         run_subgraph,
                                         subgraph_run,
                                         support_reason,
)

__all__ = ["GATE_ITERATIONS", "HOST_SCALAR_BYTES", "RUNS", "RUN_AHEAD_BYTES",
           "SUBGRAPH_INPUTS", "Gate", "Replay", "ScalarOp", "SubgraphRun", "body_runs",
           "host_scalar_ops", "loop_input_on_device", "plan_ahead", "referenced", "reruns",
           "run_control", "run_subgraph", "subgraph_run", "support_reason"]
