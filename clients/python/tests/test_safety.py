"""The token goes to the server it was made for, and ids stay in their place in a path
(issue 50)."""

from __future__ import annotations

import socket
import threading

import pytest

from verdict_client import VerdictError


class Listener:
    """A port on 127.0.0.1 that records whether anyone connected to it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connected = False
        self._stop = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connected = True
            conn.close()

    def close(self) -> None:
        self._stop = True
        self._thread.join()
        self.sock.close()


@pytest.fixture
def listener():
    got = Listener()
    yield got
    got.close()


def test_a_url_on_another_host_is_refused_before_anything_is_sent(admin, listener):
    for elsewhere in (
        f"http://127.0.0.1:{listener.port}/steal",
        f"//127.0.0.1:{listener.port}/steal",
        f"HTTP://127.0.0.1:{listener.port}/api/v1/me",
    ):
        with pytest.raises(ValueError, match="sends its token there only"):
            admin.request("GET", elsewhere)
    assert not listener.connected, "the token was sent to another host"
    # The server's own address, written whole, is allowed.
    assert admin.request("GET", f"{admin.base_url}/api/v1/me")["username"] == "admin"


@pytest.mark.asyncio
async def test_the_async_client_refuses_another_host_too(server, listener):
    async with server.async_client("admin") as admin:
        with pytest.raises(ValueError, match="sends its token there only"):
            await admin.request("GET", f"http://127.0.0.1:{listener.port}/steal")
        with pytest.raises(ValueError, match="is not an id"):
            await admin.batch("..")
    assert not listener.connected


def test_an_id_cannot_climb_out_of_its_place_in_the_path(admin):
    sent = []
    admin._http.event_hooks["request"].append(lambda request: sent.append(request.url))
    with pytest.raises(VerdictError) as raised:
        admin.batch("x/../../../../steal")
    assert raised.value.status in (400, 404)
    assert len(sent) == 1
    assert sent[0].raw_path.decode() == "/api/v1/batches/x%2F..%2F..%2F..%2F..%2Fsteal"
    with pytest.raises(VerdictError) as raised:
        admin.metrics("not?a=batch#here")
    assert raised.value.status == 400, "the whole id reached the batch's route"
    assert sent[1].raw_path.decode() == "/api/v1/batches/not%3Fa%3Dbatch%23here/metrics"
    for climbing in ("..", ".", ""):
        with pytest.raises(ValueError, match="is not an id"):
            admin.batch(climbing)
    assert len(sent) == 2, "nothing sent for an id that would climb"
