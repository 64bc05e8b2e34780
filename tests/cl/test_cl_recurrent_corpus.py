"""Recurrent models of the conformance corpus run with zero host partitions on the OpenCL
device without fallback: one spec per operation (LSTM, the sequence LSTMs, the RNNs, SVDF, the
quantized LSTMs), including the CTS's absent optional operands given as omitted model inputs."""

from __future__ import annotations

import pytest

from clnn.suites.corpus import build_model, build_request, read_corpus_file
from hal.errors import ErrorStatus
from tests.kits.paths import CORPUS

SPECS = ["V1_0__lstm3", "V1_2__layer_norm_lstm",
         "V1_2__unidirectional_sequence_lstm_batch_major_norm_peephole_projection",
         "V1_2__bidirectional_sequence_lstm_float16_batch_major_aux_input",
         "V1_0__rnn_state", "V1_3__unidirectional_sequence_rnn",
         "V1_3__bidirectional_sequence_rnn_state_output", "V1_0__svdf2",
         "V1_2__quantized_lstm", "V1_3__qlstm_projection"]

pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"no corpus at {CORPUS}")


@pytest.mark.parametrize("spec", SPECS)
def test_corpus_recurrent_model_has_no_host_partition(cl_device, spec):
    test = read_corpus_file(CORPUS / f"{spec}.json.gz")["tests"][0]
    model = build_model(test)
    assert all(cl_device.get_supported_operations(model))
    prepared = cl_device.prepare_model(model)
    request, _ = build_request(test)
    assert prepared.execute_synchronously(request).status == ErrorStatus.NONE
    assert all(p.on_cl for p in prepared.partitions)
    for part in prepared.partitions:
        # the execution's plan (None would mean the reference device ran the partition)
        assert part.plans and all(plan is not None for plan in part.plans.values())
