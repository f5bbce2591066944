"""Fixtures shared by unit test modules: ``lab_env`` (the CLI against libvirt's test driver
and a recording host, checked to have changed nothing) for every module of bad input."""

from tests.unit.test_bad_input import lab_env  # noqa: F401
