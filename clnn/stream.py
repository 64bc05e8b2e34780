"""The state of a streaming model between executions (``clnn.load`` of a model whose TFLite
resource variables became extra inputs and outputs: clnn/tflite/state.py).

:class:`StreamState` keeps each state variable in two device memories (HAL 1.3 memory domains:
``Device.allocate`` with the state's input role and its output role, clnn/memory.py on the
OpenCL device): an execution reads one and writes the other, the next execution swaps them.
On the OpenCL device both are ``cl.Buffer`` s, read and written by the kernels on the device,
so a stream of frames moves only its own inputs and outputs through the host. A device without
device memories keeps the state as host arrays, carried from one execution's outputs to the
next one's inputs.
"""

from __future__ import annotations

import numpy as np

from hal.builder import make_request
from hal.errors import ErrorStatus, HalError
from hal.types import BufferDesc, BufferRole, DataLocation, HostMemory, Request, RequestArgument


class StreamState:
    """The state variables (``clnn.importing.StateTensor``) of a model prepared as
    ``prepared``; the model's inputs are ``n_inputs`` of its own and then one per state, its
    outputs ``n_outputs`` and then one per state."""

    def __init__(self, device, prepared, hal_model, n_inputs: int, n_outputs: int, states):
        self.hal_model = hal_model
        self.states = list(states)
        self.n_inputs, self.n_outputs = n_inputs, n_outputs
        #: per state: [the memory read by the next execution, the one it writes]
        self.buffers: list[list] | None = None
        self.host: list[np.ndarray] = []
        allocate = getattr(device, "allocate", None)
        try:
            self.buffers = [
                [allocate(BufferDesc(tuple(s.shape)), [prepared], [BufferRole(0, n_inputs + k)],
                          [BufferRole(0, n_outputs + k)]) for _ in range(2)]
                for k, s in enumerate(self.states)]
        except (HalError, TypeError, NotImplementedError):  # no device memories: host arrays
            self.buffers = None
        self.reset()

    @property
    def on_device(self) -> bool:
        """Whether the state lives in device memories (else host arrays)."""
        return self.buffers is not None

    def reset(self):
        """Every state variable back to its initial value."""
        if self.buffers is None:
            self.host = [np.array(s.initial) for s in self.states]
            return
        for s, pair in zip(self.states, self.buffers):
            status = pair[0].copy_from(HostMemory(np.ascontiguousarray(s.initial).tobytes()),
                                       tuple(s.shape))
            if status != ErrorStatus.NONE:
                raise HalError(f"setting state {s.name!r} to its initial value failed: "
                               f"{status.name}", status)

    def request(self, arrays) -> Request:
        """A request of the model's own input arrays and the current state (the state
        outputs go to the other memory of each pair)."""
        arrays = list(arrays)
        if self.buffers is None:
            return make_request(self.hal_model, arrays + self.host)
        req = make_request(self.hal_model, arrays + [None] * len(self.states))
        inputs, outputs, pools = list(req.inputs), list(req.outputs), list(req.pools)
        for k, (src, dst) in enumerate(self.buffers):
            pools.append(src)
            inputs[self.n_inputs + k] = RequestArgument(False, DataLocation(len(pools) - 1))
            pools.append(dst)
            outputs[self.n_outputs + k] = RequestArgument(False, DataLocation(len(pools) - 1))
        return Request(inputs, outputs, pools)

    def own_outputs(self, request: Request) -> Request:
        """The request cut to the model's own outputs (those in host memory)."""
        return Request(request.inputs, request.outputs[: self.n_outputs], request.pools)

    def advance(self, outputs: list[np.ndarray]):
        """After a successful execution: its state outputs become the next state."""
        if self.buffers is None:
            self.host = [np.array(a) for a in outputs[self.n_outputs:]]
        else:
            self.buffers = [[dst, src] for src, dst in self.buffers]

    def values(self) -> dict[str, np.ndarray]:
        """The current value of every state variable, by name (copied to the host)."""
        if self.buffers is None:
            return {s.name: np.array(a) for s, a in zip(self.states, self.host)}
        out = {}
        for s, (src, _) in zip(self.states, self.buffers):
            host = HostMemory(s.initial.nbytes)
            status = src.copy_to(host)
            if status != ErrorStatus.NONE:
                raise HalError(f"reading state {s.name!r} failed: {status.name}", status)
            out[s.name] = np.frombuffer(bytes(host.view()), s.dtype).reshape(s.shape).copy()
        return out


# ------------------------------------------------------------------------------ inputs

def feature_frames(shape, dtype, frames: int, seed: int) -> list[np.ndarray]:
    """``frames`` seeded inputs shaped like a spectrogram stream: the input's last dimension
    is the frequency bins, the rest of it (flattened) consecutive time steps, and the frames
    follow each other in time. Smooth bumps of energy over a low floor, with a little noise
    (uniform random features, over the whole range, leave a wake-word detector's output at 0:
    these make it move). Integer inputs span their type's range, float ones [0, 1]."""
    shape = tuple(int(d) or 1 for d in shape)
    bins = shape[-1] if shape else 1
    step = int(np.prod(shape[:-1], dtype=np.int64)) if len(shape) > 1 else 1
    rng = np.random.default_rng(seed)
    n = frames * step
    t = np.arange(n)[:, None]
    f = np.arange(bins)[None, :]
    spec = np.zeros((n, bins))
    for _ in range(int(rng.integers(5, 60))):
        t0, f0 = rng.uniform(0, n), rng.uniform(0, bins)
        height = rng.uniform(10, 120) / 255
        width_t, width_f = rng.uniform(2, 40), rng.uniform(1, 15) * bins / 40
        spec += height * np.exp(-((t - t0) / width_t) ** 2 - ((f - f0) / width_f) ** 2)
    floor = rng.uniform(0, 88 / 255)
    v = np.clip(floor + spec + rng.normal(0, rng.uniform(0, 10 / 255), spec.shape), 0, 1)
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        v = np.round(info.min + v * (int(info.max) - int(info.min)))
    return [v[k * step:(k + 1) * step].reshape(shape).astype(dt) for k in range(frames)]


def random_frames(shape, dtype, frames: int, seed: int) -> list[np.ndarray]:
    """``frames`` seeded random inputs (floats uniform in [0, 1), integers over their
    range), as ``clnn run`` makes one."""
    rng = np.random.default_rng(seed)
    shape = tuple(int(d) or 1 for d in shape)
    dt = np.dtype(dtype)
    out = []
    for _ in range(frames):
        if dt.kind == "f":
            out.append(rng.random(shape).astype(dt))
        elif dt.kind == "b":
            out.append(rng.random(shape) < 0.5)
        else:
            info = np.iinfo(dt)
            out.append(rng.integers(info.min, info.max, shape, endpoint=True).astype(dt))
    return out
