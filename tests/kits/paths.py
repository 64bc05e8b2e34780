"""Where the tests find the repository and the material beside the checkout (the conformance
corpus and the seeds are never copied into the repository)."""

from __future__ import annotations

import os
from pathlib import Path

#: the repository root (tests/kits/paths.py -> parents[2])
REPO = Path(__file__).resolve().parents[2]

#: the public conformance corpus: $CLNN_CTS_CORPUS, else ../shared/cts/public beside the checkout
CORPUS = Path(os.environ.get("CLNN_CTS_CORPUS", REPO.parent / "shared/cts/public"))

#: the seed documents (HAL types, OperationCode docs) beside the checkout
SEEDS = REPO.parent / "shared" / "seeds"
