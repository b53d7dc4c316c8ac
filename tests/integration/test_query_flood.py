"""A flood of queries never holds up another client's stream. Clients that
pipeline hundreds of queries of one kind (and hold the whole city, so the
lease totals of QueryStats span every table) get every request answered,
Accepted or refused by their own limits; meanwhile a subscriber receives
the delta of every step. (QueryStats used to walk every subscriber's lease
table on the network thread; ten clients pipelining it on a 40 000-walker
city starved the streams for up to 1.9 s.)"""

import pytest

from bustle_client import CommandStatus, RejectReason

from population_helpers import DEFAULT_CITY, City, start_city

#: Each query kind, with the fields its body needs (QueryEntity: filled in).
KINDS = ["QueryStats", "QueryLeases", "QuerySignals", "QueryPopulation", "QueryZones",
         "QueryEntity"]
FLOODERS = 2
REQUESTS = 150
STEPS = 8


@pytest.mark.parametrize("kind", KINDS)
def test_a_query_flood_leaves_every_stream_running(start_server, kind):
    srv = start_city(start_server, config=DEFAULT_CITY)
    with City(srv, f"flood-{kind}") as city:
        city.step(20)
        some = next(iter(city.mirror.pedestrians())).id
        fields = {"index": some.index, "generation": some.generation} if kind == "QueryEntity" else {}
        flooders = []
        try:
            for n in range(FLOODERS):
                f = srv.connect()
                f.hello(f"flooder-{n}")
                assert f.subscribe(motion_tolerance_mm=0).accepted
                flooders.append((f, [f.send_command(kind, **fields) for _ in range(REQUESTS)]))
            for _ in range(STEPS):
                step = city.step(1).applied_step  # waits for the subscriber's delta of the step
                assert city.mirror.step == step
            outcomes = {}
            for f, requests in flooders:
                for rid in requests:
                    r = f.wait_result(rid, timeout=10.0)
                    key = "accepted" if r.status == CommandStatus.Accepted else r.reason.name
                    outcomes[key] = outcomes.get(key, 0) + 1
            assert sum(outcomes.values()) == FLOODERS * REQUESTS
            assert set(outcomes) <= {"accepted", RejectReason.RateLimited.name,
                                     RejectReason.InboxFull.name}, outcomes
            assert outcomes.get("accepted", 0) >= FLOODERS * 64, outcomes
        finally:
            for f, _ in flooders:
                f.close()
        # The city and the subscriber are unharmed: one more step streams.
        step = city.step(1).applied_step
        assert city.mirror.step == step
