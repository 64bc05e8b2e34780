"""clnn.bench.records: what the benchmark scripts write."""

import json

from clnn.bench.records import git_commit, write_record
from tests.kits.paths import REPO


def test_write_record_writes_json_and_says_where(tmp_path, capsys):
    path = tmp_path / "r.json"
    write_record(str(path), {"a": [1, 2]}, "; load average 0.5")
    assert json.loads(path.read_text()) == {"a": [1, 2]}
    assert capsys.readouterr().err == f"wrote {path}; load average 0.5\n"


def test_git_commit_names_the_checkout(tmp_path):
    assert git_commit(str(tmp_path)) == ""  # not a checkout
    short, full = git_commit(str(REPO)), git_commit(str(REPO), full=True)
    assert short and full.startswith(short) and len(full) == 40
