"""Random scenarios: every injected fault found at the right level, nothing else."""

import pytest
from scenarios import scenario
from test_detection_mock import run


@pytest.mark.parametrize("seed", range(100, 110))
def test_random_scenario(tmp_path, seed):
    faults, culprits = scenario(seed)
    _, found = run(tmp_path, faults, seed)
    assert found == culprits, faults
