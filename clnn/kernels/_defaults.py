"""The device-class defaults of the tuned kernel families, as data: one row per device class
(as CLBlast's database keeps one per device), chosen from device queries by
:func:`device_class`. A family's default variant reads its row; the rules that depend on a
layer's shape (clnn.kernels._gemm.pick_tile, clnn.kernels._depthwise_variants.heuristic's CPU
rules) stay with the family and are the CPU row's ``"rule"`` entries. What a row holds is
backed by the kernel-time benchmarks ``clnn bench gemm`` and benchmarks/speed_ab.py (CPU, PoCL)
and by the GPU budget of registers per work-item (at most 16 accumulators); a new device class
is a new row, measured with ``clnn tune``.

    device_class(limits) -> "cpu" | "gpu" | "gpu/<vendor>" | ...
    defaults(traits) -> ClassDefaults
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ClassDefaults:
    """The defaults and variant spaces of one device class."""

    #: the GEMM's untuned tile ("rule": clnn.kernels._gemm.pick_tile, the PoCL-measured CPU
    #: rule), and the one for outputs of at most 2 columns
    gemm_tile: object
    gemm_tile_narrow: object
    #: the GEMM's untuned work-group: "auto" (clnn.kernels._gemm.local_size), or the first
    #: of these shapes the device's limits take
    gemm_group: object
    #: the GEMM tiles and work-groups the tuner measures
    gemm_tiles: tuple
    gemm_groups: tuple
    #: the direct kernels' untuned variant ("rule": the CPU rules of
    #: clnn.kernels._depthwise_variants.heuristic and _conv_variants.heuristic), else the widest
    #: vector and tile no wider than these, and the rows per work-group (0: the driver's)
    direct: object
    direct_max_vw: int = 4
    direct_max_tx: int = 2
    direct_rows: int = 0
    #: the depthwise -> pointwise fusion applies (its private panel is a CPU thread's budget)
    dwpw: bool = False
    #: the float32 layers the fusion runs without a tuning entry (clnn/kernels/_dwpw_variants.py
    #: ``class_rule``): at most ``dwpw_pixels`` output pixels (batch x rows x columns; 0: none,
    #: the fusion is the tuner's alone), filters of at most ``dwpw_taps`` taps, 1x1 filters
    #: of at most ``dwpw_weights`` floats (channels x outputs: a fused work-item reads all of
    #: it for its few pixels) and at least as many outputs as channels (the depthwise work,
    #: slower inside the GEMM's work-items, small next to the GEMM's). CPU (PoCL, AVX-512,
    #: benchmarks/dwpw_chain.py: every layer of the 13 MediaPipe models a tile fits, fused
    #: against apart inside the models' chains, two runs): the saved launch wins where the
    #: layer is small, 0.65-0.9 of the two launches' time at <= 64 pixels (3x3, up to 128 x
    #: 128 weights, outputs >= channels; 288 -> 6 at 49 pixels: 1.29); at 144-256 pixels
    #: within the noise either way (0.8-1.1), beyond 576 and with 5x5 filters fused loses
    #: (1.05-1.8), and so do 288 x 288 weights at 4-16 pixels (1.1-2.6: one or two
    #: work-items)
    dwpw_pixels: int = 0
    dwpw_taps: int = 9
    dwpw_weights: int = 16384
    #: ... and at least ``dwpw_least_pixels`` output pixels, strides of at most ``dwpw_stride``:
    #: each fused kernel key costs a cold prepare a compile of 2-3x a GEMM kernel's (PoCL:
    #: 1.5-3 s more to iris_landmark's first result cold), and the layers of 4 pixels (their
    #: own tile) or stride 2 (their own kernel) gained nothing measurable (0.75-1.15).
    #: CPU: 0 (the rule off). With 64, the four models it fused (iris_landmark,
    #: face_detection_short_range, face_landmark, hand_recrop) ran 0.94-1.07x as fast as
    #: without in two quiet interleaved runs (load 1.7-4; noise), and their cold first result
    #: took 0.4-0.8 s longer (face_landmark 1.56 -> 2.32 s, iris_landmark 1.72 -> 2.14 s):
    #: benchmarks/results/dwpw_rule-20261130-s23.json
    dwpw_least_pixels: int = 8
    dwpw_stride: int = 1
    #: the pixels a fused work-item computes along an output row (clnn/kernels/_dwpw.py
    #: ``row_pixels``; 0: one GEMM tile's), for filters of at most ``dwpw_px_taps`` taps.
    #: CPU (PoCL, AVX-512, benchmarks/dwpw_chain.py, every layer a tile fits fused against
    #: apart in the models' chains, load 4-5): 16, the fused 3x3 stride-1 layers at 0.92-1.35
    #: (most 1.0-1.2) of the two launches' time from 144 to 12,544 pixels (one tile's pixels
    #: a work-item: 1.2-2.2), 0.64-0.9 at <= 64 pixels; 5x5 filters (their 25 vectors do not
    #: stay in the registers) keep one tile's
    dwpw_px: int = 0
    dwpw_px_taps: int = 9
    #: the widest float vector of the normalization kernels that run a row in vectors
    #: (LOCAL_RESPONSE_NORMALIZATION along the channels, normalization.cl.mako lrn_vec:
    #: benchmarks/layout_families.py; CPU: 8 and 16 alike, 4 1.3-1.6x slower)
    norm_max_vw: int = 4
    #: the float values a work-item of QUANTIZE's vector part converts (quantization.cl.mako
    #: ``vq``): 8, or 16 (one vector of 16 floats, its bytes stored as one vector, clamped by
    #: compares and selects). CPU (PoCL, AVX-512, visual_wake_words' input of 27,648 values
    #: in its chain on the basic device, fastest of 200 runs): 8.2 -> 1.9 us; a GPU: 8
    #: (unmeasured)
    quantize_vw: int = 8
    #: the lanes of the quantized kernels' vectors whose "up" requantization runs on lane
    #: pairs (rq "upp": common.mako mbqm_right_vector; clnn/kernels/_gemm.py rq_key): the
    #: vector's even and odd lanes multiplied in place as 64-bit pairs, where the general
    #: form widens each half (cross-lane moves). 0: never. CPU (PoCL, AVX-512, Zen 4,
    #: visual_wake_words' layers in its chain on the basic device, fastest of 200 runs, three
    #: turns each with caches apart, load 3.8-4.1): 16 -- its GEMMs and depthwise layers of 16
    #: lanes 9-19% faster (8x8 -> 16 GEMM 8.95 -> 7.65 us, 24x24x32 depthwise 5.05 -> 4.30),
    #: the model's kernels 91-93 -> 85-86 us; its 8-lane kernels 10-13% slower so (8-channel
    #: depthwise 7.1 -> 8.0, the first convolution 20.2 -> 21.6): not them. A GPU: 0
    #: (its 64-bit multiplies unmeasured)
    requant_pairs: int = 0
    #: the outputs of a row per work-item of the NCHW float "planes" kernels (depthwise_planes,
    #: pool_planes) at a column stride of 1 (stride 2: half, so that the row span a work-item
    #: loads stays about as long, unless planes_s2 says), and the output rows per work-item
    #: for row strides of at most 2 (each input row loaded once for the rows it serves; larger
    #: strides: 1). CPU (PoCL, kernel-time A/Bs on benchmarks/layout_families.py's shapes,
    #: load 6-9): 16 x 8 1.1-1.4x faster than 8 x 4 at stride 1, 8 x 8 the best at stride 2
    #: (then), 1.3-2x faster than the one row of before; a GPU's are its register budget's
    #: (4 x 2)
    planes_vw: int = 4
    planes_rows: int = 2
    #: (vw, rows) of the planes kernels at a column stride of 2 (None: half planes_vw,
    #: planes_rows). CPU, since their masked whole-vector loads (c.row_vecs; interleaved A/B,
    #: load 10): 16 x 4 the best, depthwise 3x3 s2 1x56x56x96 0.049 -> 0.036 ms against 8 x 8,
    #: max pool 3x3 s2 1x112x112x64 0.087 -> 0.078
    planes_s2: tuple | None = None
    #: output rows per work-item of resize_rep (NCHW float resize at a whole factor along the
    #: rows: the column tables' vector and checks once for them). CPU (PoCL, interleaved A/B
    #: on benchmarks/layout_families.py's x2 shapes, load 13): 4 rows 0.5-0.8x the time of 1
    resize_rows: int = 1
    #: the channels per vector load of the float32 im2col packer (gemm.cl.mako im2col_pack's
    #: ``cv``: each row's cv contiguous channels loaded at once and transposed in registers;
    #: 1: channel by channel). CPU (PoCL, kernel-time A/B on the ONNX dev models' strided
    #: layers): 8; a GPU's: 4 (a float4 load per work-item)
    im2col_cv: int = 4
    #: output rows per work-item of the NHWC depthwise sliding window (1: depthwise_slide,
    #: more: depthwise_slide_rows, each input vector loaded once for the band's rows), at a
    #: row stride of 1 (2: half of it; wider: 1), where the filter and the band's accumulators
    #: fit the registers (clnn.kernels._depthwise_variants.bands). CPU (PoCL, AVX-512, the
    #: models' 3x3 layers on benchmarks/depthwise_roofline.py's scratch layers): 4 rows ran
    #: 1.1-1.4x faster than one at stride 1 (2 at stride 2: 1.1-1.25x), but a band kernel
    #: compiles in 0.45-0.52 s against 0.24-0.31 (a cold prepare, #37) and no whole model
    #: measured faster: 1 on both classes, bands of 2 and 4 rows tuner candidates. s23: over
    #: the 13 MediaPipe models' 3x3 stride 1 layers on the tuner's scratch layers 2 rows ran
    #: 1.07x faster than one (4 rows 1.13x), compiling in about the one-row kernel's time;
    #: whole models (in-process A/B at load 5) showed no gain beyond the noise, and
    #: pose_detection's medians came out bimodal between prepares (5.7 or 7.9 ms, on either
    #: side: 0.69-0.72x with 2 rows twice, 1.16x for the other change once): still 1, to
    #: measure quiet. s24 (interleaved, 21 turns, load 4.3-4.6): the 16-wide float32 layers
    #: 0.80x the time in bands of 4 at stride 1 (0.92x in 2), 0.78x in bands of 2 at stride 2,
    #: the 8-wide ones slower (bands(): one row); the first launch's codegen +0.15 s (2 rows)
    #: to +0.4 s (4) a kernel, +0.1-0.27 CPU-s per cold prepare (pose_detection,
    #: face_detection_short_range) against #37's cold target, no whole model shown faster: CPU
    #: and GPU 1 (record depthwise_roofline-20261130-s24-dw). s25 (tuner's scratch layers,
    #: fastest of 21 runs each, whole stores on, load 2.2-2.7): the 13 models' 3x3 stride 1
    #: layers 1.11x faster in bands of 2 than in one row, those of 96-864 channels 1.2-1.4x
    #: (the input vectors loaded once for two output rows: their rows are 384-3456 bytes a
    #: pixel apart, the one-row kernel waits on them); the same kernel count per model (a
    #: band kernel instead of the one-row one; stride 2 keeps one row): CPU 2 (record
    #: depthwise_roofline-20261130-s25-dw), a GPU 1
    dw_bands: int = 1
    #: the same for filters of more than 9 taps (5x5) at a row stride of 1 or 2 where native
    #: vectors hold 16 floats, also where a band passes the last row (so that a model builds
    #: the band kernel instead of the one-row one, not both: +0.1-0.2 s to a cold prepare
    #: rather than 1.5 s; 7x7 outputs 0.77-1.0x, 9 rows 0.9-1.0x as fast): the sliding
    #: window's ceil(fw / sw) accumulators a row each take fh FMAs a step
    #: in one dependent chain, 5 chains of 5 at 5x5 stride 1 keep the two FMA pipes at most
    #: 5 / 8 busy (4-cycle latency); a band of 2 rows runs 10 (its filter vectors spill in
    #: part, read as FMA memory operands). CPU (PoCL, AVX-512, the 13 MediaPipe models' 5x5
    #: layers on the tuner's scratch layers): 2 rows 1.12x faster over them than 1 (up to 2x
    #: at 56x56x96 stride 2), 4 rows slower than 2
    dw_bands_wide: int = 1
    #: those bands of dw_bands_wide rows at a row stride of 1 read their input rows outside
    #: the input as zeros (key ``mr``: a select on the row's clamped load) so that every band,
    #: not only those whose rows all lie inside the input, runs its steps inside the input
    #: unchecked: the bands of images of a few rows were all checked (a 7x7 output's 4 bands
    #: of 2 rows: one inside). CPU (PoCL, AVX-512): on; a GPU: off (unmeasured)
    dw_bands_masked: bool = False
    #: float rows of at most this many output pixels of filters of more than 9 taps at stride
    #: 1 run the compiled row (depthwise_row, one tile of 8 pixels: the row's border taps
    #: skipped when it is built) where native vectors hold 16 floats; 0: never. A kernel per
    #: such row geometry (one in each of 6 of the 13 MediaPipe models: 6, 7 or 8 pixels).
    #: 1.14-1.43x on those layers, timed alone, but no whole model measurably faster, and a
    #: kernel more to compile for the first result (0.2-0.46 s of hand_landmark_full's cold
    #: prepare): 0 on every class for now; the tuner still tries depthwise_row on them
    dw_row_narrow: int = 0
    #: the vector width of the NHWC depthwise row kernels (depthwise_slide, _slide_rows,
    #: _sweep) on channel counts it does not divide but exceeds (the last channel vector
    #: overlapping the one before it: depthwise_conv2d.cl.mako dw_row_setup), instead of the
    #: widest divisor (8, 4, 2: a kernel key each, ~0.1 s of a chain's compile each on PoCL,
    #: #37); 0: the widest divisor. CPU (PoCL, AVX-512): 16; a GPU: 0 (unmeasured)
    dw_overlap_vw: int = 0
    #: the input-channel vector of ``conv_cvec`` (float32) on channel counts it does not
    #: divide but reaches: the last vector starts at C - vw, overlapping the one before it,
    #: its filter lanes there zero (packed at planning), instead of the widest divisor
    #: (16, 8, 4: a kernel key each, ~0.04 CPU-s of a chain's compile each on PoCL, #37);
    #: 0: the widest divisor. CPU (PoCL, AVX-512): 16; a GPU: 0 (unmeasured)
    cvec_overlap_vw: int = 0
    #: the float32 NHWC depthwise kernels store each output vector as one whole copy of its
    #: bytes (``__builtin_memcpy``: key ``ws``) instead of ``vstore<n>``, whose unknown
    #: alignment PoCL (LLVM 15, AVX-512) splits into three stores of 16, 16 and 32 bytes (one
    #: 64-byte ``vmovups`` with the copy). CPU (the 13 MediaPipe models' layers on the
    #: tuner's scratch layers, fastest of 25 runs each, load 3.6-5.5): 3x3 layers 1.04x, 5x5
    #: 1.03x faster, the same kernels; a GPU: off (unmeasured: a vendor compiler may lack the
    #: builtin)
    dw_whole_stores: bool = False
    #: float NHWC depthwise layers of 8 channels (filters of at most 3 columns and 9 taps,
    #: stride 1 along x) run depthwise_pairs, two pixels a vector of 16 floats, where the
    #: native vectors hold 16 (depthwise_slide's 8-channel vectors fill half of them). CPU
    #: (AVX-512; the 13 MediaPipe models' 8-channel layers on the tuner's scratch layers,
    #: fastest of 21 runs, load 4.5-5): 1.24x faster than depthwise_slide (256x256x8 3x3 45 ->
    #: 36 us); a GPU: off (its rule takes narrower vectors)
    dw_pairs: bool = False
    #: float NHWC 3x3 depthwise layers of 8 m channels (m odd, at most this; stride and
    #: dilation 1 along x) run depthwise_flat (the row's channels as one flat array of
    #: 16-float vectors: no lane idle or computed twice) in bands of dw_flat_rows output rows,
    #: where native vectors hold 16 floats; 0: off. CPU (AVX-512; the 13 MediaPipe models'
    #: 8-channel 3x3 stride 1 layers on the tuner's scratch layers, each variant timed on its
    #: own in turns, load 7.6): bands of 2 rows 0.86-0.97x the time of depthwise_pairs (64x64
    #: to 256x256), one row 1.0-2.3x; the 24-channel layers (m 3) 1.06-1.18x the time of the
    #: 16-wide overlapping vectors, 1x1 filters 1.12x: 1 (8 channels); a GPU: 0 (unmeasured)
    dw_flat_m: int = 0
    dw_flat_rows: int = 1
    #: float32 NHWC convolutions that would pack an im2col panel run the GEMM on the input
    #: itself (amode "taps", gemm.cl.mako: the panel's write and read saved, the strided and
    #: 3x3 layers Winograd does not take). CPU (PoCL): on; a GPU: off until measured
    gemm_taps: bool = False
    #: the most input channels a quantized implicit GEMM (amode "taps" accumulating in float)
    #: loads per row and tap as one vector, converted once (gemm.cl.mako taps_chunk; 1:
    #: channel by channel). CPU (PoCL, the int8 tinyml models' layers): 16; a GPU: 4
    gemm_taps_cv: int = 4
    #: tasks per compute unit of each chained launch (clnn/chain.py: at most; a work-group
    #: that ends its own block early takes what is left of the others'). Fewer tasks cost
    #: fewer task entries and steals, whose rows the owner of the next launch then reads from
    #: another core's caches; more balance the cores when one is held up. CPU (PoCL, 2 cores,
    #: the chains' spans by their cycle counters, fastest of 200-300 runs, load 2.6-4):
    #: 4 against 16 iris_landmark 292-298 -> 279-284 us, face_detection_short_range
    #: 291-298 -> 282-287, face_detection_full_range_sparse 796 -> 775, hand_landmark_lite
    #: 901 -> 917 (2: as 4; 1: the least, but a held-up core's block is then taken whole or
    #: not at all). Chains are a CPU device's (clnn.chain.enabled)
    chain_tasks: int = 4
    #: the most polls a chain's work-group makes waiting for a launch's tasks before it
    #: leaves the chain to the other work-groups (they take every task it left; 0: it waits
    #: however long). Where other processes share the cores, a worker descheduled while it
    #: runs a task held its partner spinning for its whole time slice, launch after launch:
    #: pose_detection ran 8x its quiet time where litert ran 2x (load 4-5). CPU (PoCL,
    #: AVX-512, about 0.23 ns a poll): 1 << 20, ~0.24 ms, well past a launch's longest
    #: wait in a quiet run (~20 us)
    chain_spin: int = 0
    #: the fewest compute units of a device whose plans run chained by default (clnn.chain.
    #: enabled). CPU: 1 -- on a device of one unit a chain is one launch per execution instead
    #: of one per kernel. CPU (PoCL's basic device, the companion of clnn/companion.py, the
    #: int8 tinyml models' executions in one process taking turns, load 2.8, outputs alike):
    #: chained 0.66-0.78x the time one by one (anomaly_detection 28.9 against 42.1 us,
    #: keyword_spotting 60.8 / 79.2, image_classification 118 / 141, visual_wake_words
    #: 158 / 205; record int8_models_ab-20261130-s25-small)
    chain_min_units: int = 2
    #: a model runs on the platform's low-latency companion device (clnn/companion.py) when
    #: its estimated work on one compute unit (``companion_op_s`` per operation plus
    #: ``companion_flop_s`` per FLOP of clnn.kernels._work.op_flop) is under
    #: ``companion_gaps`` times the gap between the two devices' measured launch floors: one
    #: unit loses the device's other units, which pay only where the work is several gaps
    #: long. CPU (PoCL pthread 2 units against basic, the int8 tinyml models, clnn/litert
    #: runs, load ~2): basic won at keyword_spotting (~2.7 gaps of work, 62 against 74-85 us)
    #: and anomaly_detection (28.7 against 55.5), tied at image_classification (~5.7 gaps,
    #: 117 against 125) and lost at visual_wake_words (~6.3, 157 against 127): 3.5 gaps,
    #: 2.2 us an operation, 2.7 ps a FLOP (one core's int8 rate in these models; float ones
    #: run faster, so a float model is estimated long). Then 4.0 gaps: with the int8 kernels'
    #: faster requantization visual_wake_words (estimated 113 us, 3.8 gaps of the 30.6 us
    #: floor kept on that machine) ran faster on basic than on pthread in every turn (one
    #: process, taking turns: 99 against 108 us at load 7.3, 101 / 111 at load 4.2, and
    #: before those kernels 116 / 131 at load 2.2; models_ab.py at load 7.3: 0.131 -> 0.100
    #: ms, litert 0.079). 0: never (a GPU: unmeasured)
    companion_gaps: float = 0.0
    companion_op_s: float = 0.0
    companion_flop_s: float = 0.0
    #: ... and a model estimated longer than this never considers the companion, nor measures
    #: a floor (the probes compile a kernel: 0.7 s each on a cold PoCL cache, once per
    #: machine). CPU: 150 us, 3.5 gaps of the slowest pthread floor seen (the fastest tenth
    #: 17.8-26 us over processes and loads 1-5, medians to ~40): the smallest MediaPipe model,
    #: hand_recrop, is estimated at 192 us
    companion_max_s: float = 0.0
    #: kernel families whose kernel a chain's task function calls once per work-item (a
    #: function of its own, ``noinline``) instead of inlining it into the task's loop
    #: (:func:`clnn.chain.source`): the compiler then optimizes the kernel's body once,
    #: outside a loop, which costs less to compile. CPU (PoCL 3.1, LLVM 15; record
    #: issue37_cgen-20261130-s24, load 4-7): conv2d and depthwise_conv2d called, the 13
    #: MediaPipe chains' compile -6% CPU (pose_detection -12%, pose_landmark_full -10%), but
    #: their runs ~1% slower (models_ab against a fixed base, fastest runs' geomean 1.006 and
    #: 1.013, 1.000 and 0.997 without; in-process 1.005-1.009); the GEMM called too: -11%
    #: compile, runs 3-8% slower. None on either class: runs first (benchmarks/
    #: chain_called_ab.py measures a choice)
    chain_called: tuple = ()
    #: a chain's task loops over their work-items (clnn.chain._task) ask the compiler not to
    #: unroll them (``#pragma clang loop unroll(disable)``: the loop's body is a whole
    #: kernel's work-item, which unrolled copies only cost the compile). CPU (PoCL 3.1, LLVM
    #: 15): on; a GPU: off (chains off there; its compiler unmeasured)
    chain_no_unroll: bool = False
    #: a chain program's buffer arguments: the chain's count rounded up to a power of two,
    #: at least this many (0: exactly the chain's count), so that two models of the same
    #: kernels (palm_detection_full and _lite) share one program and a new model finds it
    #: compiled (#37); unused arguments cost a pointer each per launch. CPU: 16
    chain_buffers: int = 0
    #: a chain's read-only constants (weights, biases, requantization tables: buffers made
    #: from host memory) copied into one buffer, each kernel pointed at its offset
    #: (clnn/chain.py pack_constants): one buffer argument where there were dozens. CPU
    #: (PoCL 3.1, whose launch costs ~0.09 us a buffer argument: visual_wake_words' chain of
    #: 75 buffers, 124 arguments, ran 79 us and launched in 93): on
    chain_pack_constants: bool = False
    #: a float GEMM kernel of a plan compiles the straight-line epilogue blocks of the
    #: ``post`` values the plan launches it with, not of every common one (gemm.cl.mako
    #: FAST_POSTS), and no general full-tile block where none of its launches needs one
    #: (clnn.passes.realize.fast_posts): the same code runs, what is left out cost the
    #: compile. CPU (PoCL): the MediaPipe models' GEMM kernels 0.23 -> 0.14 s of CPU each in
    #: their chains (with the one-loop partial path; record
    #: issue37_compile_profile-20261129-s23); a GPU's compiler unmeasured: off
    gemm_plan_posts: bool = False
    #: with ``gemm_plan_posts``: a plan's float GEMM launches whose kernels differ only in
    #: ``half`` (a last vector half past N: gemm.cl.mako store_half, chosen at run time from
    #: N) run the one kernel with it, the others' panels never taking its branch: a kernel key
    #: fewer to compile where a model has both (pose_landmark_full's 8 x 16 tiles). CPU
    #: (PoCL): on; a GPU's compiler unmeasured: off
    gemm_plan_half: bool = False
    #: those quantized GEMMs take each converted A value back from private memory (an address
    #: the compiler cannot resolve, gemm.cl.mako ``lm``), so that an FMA reads it as a
    #: broadcast load instead of a permutation of the vector's lanes. CPU (PoCL, AVX-512,
    #: per-launch minima in one process taking turns, load 5): the int8 tinyml models' GEMMs
    #: 2-3% less kernel time (image_classification 104.5 -> 101.7 us, visual_wake_words
    #: 81.8 -> 79.4, keyword_spotting 20.2 -> 19.6); a GPU: off (its private arrays may spill)
    gemm_lane_memory: bool = False
    #: those quantized GEMMs (taps or contiguous rows, an even number of channels per vector)
    #: accumulate in int32 the products of int16 pairs instead of in float (gemm.cl.mako
    #: ``ip``: B packed as short pairs, one multiply-add of pairs per two products, the
    #: target's pmaddwd where the compiler offers it). CPU (PoCL, AVX-512): on (record
    #: int8_models_ab-20261130-s24-int8); a GPU: off (unmeasured)
    gemm_int_pairs: bool = False
    #: ``ip`` GEMMs of 16 lanes run their K loop in one call of a function compiled for
    #: AVX512-VNNI (gemm.cl.mako vk_helper: vpdpwssd) where the device passes the probe of
    #: clnn/kernels/_vnni.py (a kernel with that function built and run in a subprocess; the
    #: answer kept per device in clnn's cache). CPU: the probe decides; a GPU: off
    gemm_vnni: bool = False
    #: an 8-bit conv_tile layer of this many bytes or more, and at most 16, in a filter row's
    #: window (fw x C: the 3-channel first layers) runs conv2d.cl.mako's conv_quads instead:
    #: each filter row's bytes by quads through AVX512-VNNI's vpdpbusd
    #: (clnn/kernels/_conv_quads.py), where gemm_vnni's probe passed; 0: never. CPU (Zen 5,
    #: the layers in their chains on the basic device, fastest of 300 runs, taking turns with
    #: conv_tile): 8 -- image_classification's 3x3x3 (9 bytes) 9.2 -> 4.2 us, keyword_spotting's
    #: 10x4x1 (4 bytes, one quad a row) 5.8-6.2 -> 6.2 us; a GPU: 0 (no VNNI)
    conv_quads: int = 0
    #: float32 conv_tile layers of (n - 0.5) vectors of output channels (24 on 16-wide
    #: vectors, where the ``half`` variant pads a quarter of its lanes) take two pixels'
    #: channels as whole vectors (conv2d.cl.mako ``pairs``: 24 channels x 2 pixels, three
    #: vectors of 16, the middle one the first pixel's last 8 and the second's first 8;
    #: clnn/kernels/_conv_variants.py pairs_variant; the rule on 24 channels, PAIRS_RULE_NV),
    #: one kernel in place of the half one.
    #: CPU (PoCL, AVX-512; the 3x3/2 224x224x3 -> 24 and 5x5/2 128x128x3 -> 24 first layers
    #: against the half variant, taking turns, medians of 300): 1.15-1.18x; a GPU: off
    conv_pairs: bool = False
    #: a float32 MAX_POOL_2D (2x2 / 2) whose output is a fused ADD's other operand runs in the
    #: GEMM epilogue, each window's maximum read from the pool's input (clnn/fusion/
    #: _pooled_residual, gemm.cl.mako ``rpool``): the pool's launch saved, a GEMM key more per
    #: tile that uses it. CPU (PoCL, quiet, fresh processes): cold compile +0.17 s on
    #: iris_landmark and hand_recrop, +0.15 s on pose_landmark_full, for 0-4% of their steady
    #: time: off; a GPU: off until measured
    gemm_pooled_residual: bool = False
    #: a float GEMM over rows of the input (amode "rows": a 1x1 convolution, a FULLY_CONNECTED)
    #: where the rule gives one vector of ``vec`` columns per row (clnn.kernels._gemm.
    #: pick_tile's mr x 16 and its 4 x 24 of 24 columns: outputs of whole vectors not a
    #: multiple of two, 144, 240, 80, 112 columns, or of whole vectors and a half, 40, 72,
    #: 24) takes the first of these (rows, vectors) tiles whose vectors divide the output's
    #: (clnn.kernels._gemm.wide_tile): one vector per row loads a broadcast of A for each FMA,
    #: as many loads as FMAs; 8 x 3 vectors load 11 for 24 FMAs, 4 x 5 9 for 20, 4 x 7 11 for
    #: 28. CPU (PoCL, AVX-512; the chains' per-launch minima of 200 profiled runs, each
    #: model's two plans in one process, load ~5; record gemm_wide_fit_tiles-20261130-s27):
    #: 8 x 3 on hand_landmark_full's 3136 x 144 x 24 layers 62 -> 51 us, 784 x 240 x 40 40 ->
    #: 32, pose_detection's 94 -> 79 and 58 -> 42, with a half vector 784 x 40 x 144 and
    #: x 240 32 -> 27 and 46 -> 40; 8 x 2 (a half) on 24 columns, against 4 x 3 vectors of 8
    #: (NARROW24): 3136 x 24 x 64 and x 144 (a fused ADD) 38.5 -> 29.0 and 91 -> 66 us,
    #: pose_detection's 40 -> 33 and 90 -> 69. These two add no GEMM kernel to the
    #: MediaPipe models (8 x 3 comes in, NARROW24 goes: tiny GEMMs are widened too, so
    #: pose_detection's 196 x 24 x 48 left it, 14.6 -> 14.0 us alone). 4 x 5 on
    #: 196 x 80 x 480 36 -> 30 us, 4 x 7 on 196 x 112 x 672 69-71 -> 63 and
    #: hand_landmark_lite's 49 x 112 29-30 -> 24-25, but each a GEMM kernel more to compile
    #: (~0.17 s of a cold prepare, #37): with them and ``gemm_fit_rows`` (7, 6) the three
    #: models' executions ran 2.7-4.5% faster still (one process taking turns, load 1.7-2.3)
    #: and their cold first results 0.45-0.8 s later (hand_landmark_full 1.67 -> 2.12-2.19
    #: s, pose_detection 1.80 -> 2.44-2.59; quiet, the trees taking turns): not taken.
    #: (8 x 3 on the 8 x 2 layers of multiples of 32 columns: 1-3%, not taken.) (): never
    gemm_wide_rows: tuple = ()
    #: those GEMMs whose M the rule's tile height pads with more than M / 16 rows in its
    #: last tile take the first of these lower heights that pads fewer rows (clnn.kernels.
    #: _gemm.fit_rows; the tile's other knobs kept): the 7 x 7 layers' 49 rows (8 pad to 56)
    #: on 7, the 6 x 6 layers' 36 (40) on 6. CPU (same records): 7 x 2 x 16 on
    #: hand_landmark_full's and pose_detection's 49 x 192/1152 layers 54-56 -> 47-50 us, 6 x
    #: 2 x 16 on palm_detection_full's 36-row layers 11.6 -> 9.9; 7 on M = 196 (8 rows: 200)
    #: mixed, +-10%. A GEMM kernel more per model (the cold prepare, above): not taken, ().
    gemm_fit_rows: tuple = ()
    #: a float GEMM of one to four rows that :func:`clnn.kernels._gemm.pick_tile` gives its
    #: own 2- or 4-row tile, tiny (``TINY`` multiply-adds or fewer), takes the 8-row tile of
    #: the same vectors where another GEMM of its plan (same A mode) runs that tile and none
    #: keeps the few-row one (clnn.kernels._gemm_variants.merge_few_rows): the rows past M
    #: cost a few microseconds a layer, the kernel key saved its compile (#37). Only the
    #: select pass's choice: a tuning cache's entry stands. False: never
    gemm_merge_few_rows: bool = False
    #: a float32 NHWC convolution whose window is its whole input (one output pixel, no
    #: padding read: a FULLY_CONNECTED's heads written as CONV_2D) runs the GEMM on the
    #: input's rows (amode "rows", clnn.kernels.conv2d.whole_rows), not the implicit GEMM
    #: ("taps"): the tiles and kernel keys of the 1x1 layers (with ``gemm_merge_few_rows``
    #: the plan's 8-row tile, #37). False: as any other convolution
    gemm_whole_rows: bool = False


_CPU = ClassDefaults(
    gemm_tile="rule", gemm_tile_narrow="rule", gemm_group="auto",
    gemm_tiles=([8, 2, 16], [8, 1, 16], [8, 1, 8], [4, 2, 16], [16, 1, 16], [8, 4, 8],
                [4, 4, 8], [4, 3, 8], [4, 1, 16], [2, 2, 16], [5, 2, 8]),
    gemm_groups=("auto", None, [4, 8], [16, 2]),
    direct="rule", direct_rows=-1, dw_bands=2, dw_bands_wide=2, dw_bands_masked=True,
    dw_overlap_vw=16, cvec_overlap_vw=16,
    dw_whole_stores=True, dw_pairs=True, dw_flat_m=1, dw_flat_rows=2, dwpw=True,
    dwpw_pixels=0, dwpw_px=16,
    norm_max_vw=16, quantize_vw=16, requant_pairs=16,
    planes_vw=16, planes_rows=8, planes_s2=(16, 4), resize_rows=4, im2col_cv=8,
    gemm_taps=True, gemm_taps_cv=16, gemm_plan_posts=True, gemm_plan_half=True,
    chain_buffers=16, chain_min_units=1, chain_spin=1 << 20, chain_pack_constants=True,
    chain_no_unroll=True,
    companion_gaps=4.0, companion_op_s=2.2e-6, companion_flop_s=2.7e-12,
    companion_max_s=150e-6,
    gemm_lane_memory=True, gemm_int_pairs=True, gemm_vnni=True, conv_quads=8, conv_pairs=True,
    gemm_wide_rows=((8, 3), (8, 2)), gemm_merge_few_rows=True,
    gemm_whole_rows=True)

_GPU = ClassDefaults(
    gemm_tile=[4, 1, 4], gemm_tile_narrow=[4, 1, 2],
    gemm_group=([16, 8], [16, 4], [8, 8], [8, 4], [4, 4]),
    gemm_tiles=([4, 1, 4], [2, 1, 4], [4, 2, 4], [1, 1, 4], [2, 2, 4], [4, 1, 8]),
    gemm_groups=([16, 4], [16, 8], [8, 8], [16, 16], [32, 8]),
    direct=None)

#: device class -> its defaults; GPU classes by vendor (the generic GPU row until one is
#: measured), an accelerator or anything else as a GPU
TABLE: dict[str, ClassDefaults] = {
    "cpu": _CPU,
    "gpu": _GPU,
    "gpu/nvidia": _GPU,
    "gpu/amd": _GPU,
    "gpu/intel": _GPU,
    "gpu/arm": _GPU,
    "gpu/qualcomm": _GPU,
    "gpu/apple": _GPU,
}

_VENDORS = {"nvidia": "nvidia", "advanced micro devices": "amd", "amd": "amd",
            "intel": "intel", "arm": "arm", "qualcomm": "qualcomm", "apple": "apple"}


def device_class(limits) -> str:
    """The class of a device (clnn.workgroups.DeviceLimits): "cpu", or "gpu/<vendor>" from
    CL_DEVICE_VENDOR where the table has that vendor, else "gpu"."""
    if limits.is_cpu:
        return "cpu"
    vendor = str(getattr(getattr(limits, "cl_device", None), "vendor", "") or "").lower()
    for name, key in _VENDORS.items():
        if name in vendor and f"gpu/{key}" in TABLE:
            return f"gpu/{key}"
    return "gpu"


def defaults(traits) -> ClassDefaults:
    """The row of a device's traits (clnn.kernels._gemm_variants.Traits)."""
    return TABLE.get(getattr(traits, "device_class", ""), None) or \
        (TABLE["cpu"] if traits.cpu else TABLE["gpu"])


@dataclass(frozen=True)
class Traits:
    """What the choice reads from the device."""
    cpu: bool
    max_wg: int
    max_items: tuple
    local_mem: int
    #: CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT (on PoCL the CPU's SIMD width in floats): a CPU's tile
    vec: int = 16
    #: the row of clnn/kernels/_defaults.py TABLE ("": the CPU or GPU row by ``cpu``)
    device_class: str = ""


def traits(limits) -> Traits:
    """The traits of a device's :class:`clnn.workgroups.DeviceLimits`."""
    return Traits(limits.is_cpu, limits.max_work_group_size, limits.max_work_item_sizes,
                  limits.local_mem_size, limits.native_vector_width_float,
                  device_class(limits))


def planes_variant(limits, stride_h: int, stride_w: int = 1) -> tuple[int, int]:
    """The vector width and rows per work-item of the NCHW "planes" kernels (depthwise_planes,
    pool_planes) on a device of these limits, for these strides."""
    d = defaults(traits(limits))
    if stride_w == 2 and d.planes_s2 is not None:
        vw, rows = d.planes_s2
        return vw, rows if stride_h <= 2 else 1
    return max(2, d.planes_vw // stride_w), d.planes_rows if stride_h <= 2 else 1


def im2col_vector(limits, dt: str, cg: int, channel_stride: int) -> int:
    """The ``cv`` of an im2col launch on a device of these limits (None: the vectorless
    path): the device class's im2col_cv, or the widest power of two below it that divides
    the group's channels, where the input is float32 with contiguous channels (NHWC); else 1."""
    if dt != "f32" or channel_stride != 1 or limits is None:
        return 1
    cv = defaults(traits(limits)).im2col_cv
    while cv > 1 and cg % cv:
        cv //= 2
    return cv if cv >= 4 else 1
