"""bench/amdahl.py: the serial fraction and the 16-core guess from three wall times."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import amdahl  # noqa: E402


def test_a_plan_the_second_cpu_halves_scales_with_every_core():
    assert amdahl.estimate(1.0, 1.0, 0.5) == (0.0, pytest.approx(16.0))


def test_a_plan_the_second_cpu_does_not_help_does_not_scale():
    assert amdahl.estimate(1.0, 1.0, 1.0) == (1.0, pytest.approx(1.0))
    # Slower on two CPUs (noise) reads as all serial, not as more than all.
    assert amdahl.estimate(1.0, 1.0, 1.2)[0] == 1.0


def test_extra_work_of_the_partitioned_plan_is_charged():
    # Half serial: 16 cores give 1 / (0.5 + 0.5 / 16); a partitioned plan that costs 1.5x the
    # one-partition work on one CPU loses that factor too.
    serial, guess = amdahl.estimate(1.0, 1.5, 1.125)
    assert serial == pytest.approx(0.5)
    assert guess == pytest.approx(1 / (1.5 * (0.5 + 0.5 / 16)))
