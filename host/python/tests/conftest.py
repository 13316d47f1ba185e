"""What the package's tests share: the spy driver (tests/fixtures/spy_driver.cpp,
a driver for the host's own tests, which stages what a real store will not),
loaded from the folder KVBLOB_FIXTURE_DIR names (ctest sets it)."""
import os

import pytest

import kvblob


@pytest.fixture
def spy():
    folder = os.environ.get("KVBLOB_FIXTURE_DIR")
    if not folder:
        pytest.fail("KVBLOB_FIXTURE_DIR must name the build's tests/fixtures folder (ctest sets it)")
    return kvblob.load(os.path.join(folder, "libkvblob_spy.so"))
