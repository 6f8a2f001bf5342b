import pytest
from fastapi.testclient import TestClient

from bookshop import storage
from bookshop.app import app


@pytest.fixture()
def client(tmp_path, monkeypatch):
    monkeypatch.setenv("BOOKSHOP_DB", str(tmp_path / "bookshop.sqlite3"))
    storage.initialise()
    return TestClient(app)
