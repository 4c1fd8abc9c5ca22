import os
import uuid

import pytest


@pytest.fixture
def brokers():
    """The broker the Go test harness started ($SPOOL_BROKERS)."""
    addr = os.environ.get("SPOOL_BROKERS")
    if not addr:
        pytest.fail("SPOOL_BROKERS is not set: run these tests through `go test` in sdk-cgo, or set it")
    return addr


@pytest.fixture
def topic_name():
    return "py-" + uuid.uuid4().hex[:10]
