from tests.listen.browser import browser  # noqa: F401 - the fixture


def pytest_collection_modifyitems(config, items):  # noqa: ANN001, ARG001 - pytest hook
    """Tests that drive a real browser are slow (`.ci/run` runs them in a step of their own:
    ``pytest -m slow tests/listen``)."""
    import pytest

    for item in items:
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
