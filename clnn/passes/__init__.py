"""Preparing a model for the OpenCL device as explicit passes, each a function from one value
to the next (each testable alone: tests/cl/test_pass_*.py):

    partition  clnn.passes.partition.partition    model, supported -> [Partition]
    shapes     clnn.passes.shapes.infer_shapes     Partition, input shapes -> Shapes
    fusion     clnn.passes.fusion.fuse             Shapes -> FusedGraph (epilogue lists)
    select     clnn.passes.select.select           FusedGraph -> Selection (each node's
                                                   kernel variants, device-class defaults)
    tune       clnn.passes.tune.tune               Selection -> Selection (tuned: the tuning
                                                   cache or measured; the only measuring)
    memory     clnn.passes.memory.plan_memory      FusedGraph -> MemoryPlan (liveness, views,
                                                   direct inputs, offsets)
    realize    clnn.passes.realize.realize         MemoryPlan -> ClPlan (pool, launches
                                                   pending; finish makes their kernels)

clnn.plan.Planner runs them per partition and input-shape signature (``plan_partition``) and
builds the kernels of every plan a prepare knows ahead together (``plan_ahead``).
``clnn plan MODEL`` prints what each produced (clnn/passes/report.py; the command:
clnn/cli/plan_cmd.py).
"""
