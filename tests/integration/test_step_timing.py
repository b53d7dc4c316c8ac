"""Step timing in Stats over the socket: the sim thread's measurement of each
executed step, summarised over the last 1024 steps (p50/p99/max, histogram)."""

from bustle_client import ClockMode, CommandStatus, RejectReason

WINDOW_MAX = 1024


def operator(srv):
    s = srv.connect()
    s.hello("it-step-timing", role="operator")
    return s


def test_step_timing_fields_present_and_sane(start_server):
    srv = start_server("--clock", "manual")
    with operator(srv) as s:
        before = s.stats()
        assert before.step_time_window == 0, "no step ran yet"
        assert before.steps_timed_total == 0
        assert before.step_time_p50_us == before.step_time_max_us == 0.0
        assert before.clock_mode == ClockMode.Manual

        s.step(40)
        st = s.stats()
        assert st.step == 40
        assert st.steps_timed_total == 40
        assert st.step_time_window == 40
        assert 0 < st.step_time_p50_us <= st.step_time_p99_us <= st.step_time_max_us
        assert st.step_time_max_us < 10e6, "a step of the default city took over 10 s"
        # The histogram: the metrics endpoint's bounds (50 us .. 1 s), one
        # count per bucket plus +Inf, summing to the window.
        bounds = st.step_time_bucket_le_us
        assert bounds[0] == 50.0 and bounds[-1] == 1e6
        assert bounds == sorted(bounds)
        assert len(st.step_time_bucket_counts) == len(bounds) + 1
        assert sum(st.step_time_bucket_counts) == st.step_time_window
        # The max falls in the last non-empty bucket.
        last = max(i for i, n in enumerate(st.step_time_bucket_counts) if n > 0)
        assert last == len(bounds) or st.step_time_max_us <= bounds[last]
        assert last == 0 or st.step_time_max_us > bounds[last - 1]


def test_step_timing_window_is_the_last_1024_steps(start_server):
    srv = start_server("--clock", "manual")
    with operator(srv) as s:
        s.step(1100)
        st = s.stats()
        assert st.steps_timed_total == 1100
        assert st.step_time_window == WINDOW_MAX
        assert sum(st.step_time_bucket_counts) == WINDOW_MAX
        assert 0 < st.step_time_p50_us <= st.step_time_p99_us <= st.step_time_max_us


def test_step_timing_over_the_last_n_steps_asked(start_server):
    """QueryStats.step_time_window: the quantiles of exactly the last N
    steps (a bench's measured window without its start-up)."""
    srv = start_server("--clock", "manual")
    with operator(srv) as s:
        s.step(30)
        for n in (1, 7, 30):
            st = s.stats(step_time_window=n)
            assert st.step_time_window == n
            assert sum(st.step_time_bucket_counts) == n
            assert 0 < st.step_time_p50_us <= st.step_time_p99_us <= st.step_time_max_us
        one = s.stats(step_time_window=1)
        assert one.step_time_p50_us == one.step_time_p99_us == one.step_time_max_us
        # Windows grow backwards from the newest step: a wider one holds the
        # narrower one's steps, so its maximum is never smaller.
        maxima = [s.stats(step_time_window=n).step_time_max_us for n in (1, 2, 5, 10, 30)]
        assert maxima == sorted(maxima)
        # More than the server has run: every step so far; 0: the default.
        assert s.stats(step_time_window=1024).step_time_window == 30
        assert s.stats(step_time_window=0).step_time_window == 30


def test_step_timing_window_over_1024_is_refused(start_server):
    srv = start_server("--clock", "manual")
    with operator(srv) as s:
        r = s.query_stats(step_time_window=1025)
        assert r.status == CommandStatus.Rejected and r.reason == RejectReason.InvalidArgument, r
        assert "step_time_window" in r.message and "1024" in r.message
        assert s.stats().step_time_window == 0, "the session still answers"
