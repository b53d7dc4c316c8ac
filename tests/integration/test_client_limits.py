"""Protocol v2's per-client limits against the real server: the command rate
(RateLimited, connection kept), connections per address (TooManyConnections)
and the idle timeout (IdleTimeout). Each is configured small here; the
defaults are in the Limits table of docs/protocol.md."""

import time

import pytest

from bustle_client import ErrorCode, ErrorMessage, RejectReason, ServerError, Session


def test_command_rate_is_limited_and_the_connection_stays(start_server):
    srv = start_server("--clock", "realtime", "--client-commands-per-second", "20")
    with srv.connect() as s, srv.connect() as other:
        s.retry_rate_limited = False
        s.hello("rate-burst")
        other.hello("rate-bystander")
        # 20/s sustained, bursts up to 40: a burst of 120 pipelined queries
        # must see RateLimited answers, and every command gets an answer.
        ids = [s.send_command("QueryStats") for _ in range(120)]
        results = [s.wait_result(i, timeout=5.0) for i in ids]
        limited = [r for r in results if r.reason == RejectReason.RateLimited]
        accepted = [r for r in results if r.status.name == "Accepted"]
        assert limited, "no RateLimited answer in a burst of 120 at 20/s"
        assert 30 <= len(accepted) <= 60, f"{len(accepted)} accepted (burst allowance is 40)"
        assert "commands per second" in limited[0].message
        # The connection stays; after a pause the client is served again.
        time.sleep(1.0)
        assert s.stats(timeout=2.0).step >= 0
        # Other clients have their own budget.
        assert other.stats(timeout=2.0).clients == 2


def test_connections_per_address_are_capped(start_server):
    srv = start_server("--clock", "realtime", "--max-clients-per-address", "3")
    kept = [srv.connect() for _ in range(3)]
    for k, s in enumerate(kept):
        s.hello(f"addr-{k}")
    extra = Session.connect(srv.host, srv.port)
    with pytest.raises(ServerError) as info:
        extra.hello("one-too-many")
    assert info.value.code == ErrorCode.TooManyConnections
    assert "127.0.0.1" in info.value.message and "3" in info.value.message
    extra.close()
    # A freed connection makes room at once.
    kept[0].close()
    deadline = time.monotonic() + 2.0
    while True:
        again = srv.connect()
        try:
            again.hello("room-again")
            break
        except ServerError:
            again.close()
            assert time.monotonic() < deadline, "no room after a connection from the address closed"
            time.sleep(0.02)
    assert again.stats(timeout=2.0).clients == 3
    for s in [again, *kept[1:]]:
        s.close()


def test_idle_clients_are_closed(start_server):
    srv = start_server("--clock", "manual", "--client-idle-timeout-ms", "500")
    with srv.connect() as idle, srv.connect() as busy:
        idle.hello("idle")
        busy.hello("busy")
        t0 = time.monotonic()
        # `busy` keeps talking; `idle` says nothing and nothing is written to
        # it (manual clock: no steps, no deltas).
        while time.monotonic() - t0 < 1.5:
            busy.stats(timeout=2.0)
            time.sleep(0.1)
        seen = idle.wait_closed(timeout=3.0)
        errors = [m for m in seen if isinstance(m, ErrorMessage)]
        assert errors and errors[0].code == ErrorCode.IdleTimeout, seen
        assert "500 ms" in errors[0].message
        assert busy.stats(timeout=2.0).clients == 1
