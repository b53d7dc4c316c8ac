"""Step timing in Stats over the socket: the sim thread's measurement of each
executed step, summarised over the last 1024 steps (p50/p99/max, histogram)."""

from bustle_client import ClockMode

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
