"""Shared fixtures of the Python package's tests."""

import pytest

import tamis


@pytest.fixture
def page_cache_off():
    """The process-wide page cache's memory tier off for one test (on by default): for tests
    that count the reads and requests of an uncached scan, or compare with a `tamis` process
    (whose single-scan commands run without it). Restores the budget after."""
    before = tamis.page_cache_stats()["budget_bytes"]
    tamis.set_page_cache(0)
    try:
        yield
    finally:
        tamis.set_page_cache(before)
