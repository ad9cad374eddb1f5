from tests.listen.browser import browser  # noqa: F401 - the fixture
