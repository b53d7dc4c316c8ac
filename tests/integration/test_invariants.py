"""--check-invariants: the real server checks every core invariant after every
step, live (manual clock, stepped over a real socket) and in batch
mode, and bustle-replay verify checks them while re-simulating."""

from conftest import SOURCE_DIR, run_cli, run_replay

CORRIDOR = SOURCE_DIR / "configs" / "corridor.city.json"
LARGEBLOCK = SOURCE_DIR / "configs" / "largeblock.city.json"


def test_live_server_steps_with_invariants_checked(start_server):
    srv = start_server("--clock", "manual", "--check-invariants", "--config", str(CORRIDOR))
    with srv.connect(timeout=15.0) as s:
        s.hello("it-invariants", role="operator")
        for k in range(1, 4):
            assert s.step(100, timeout=30.0).applied_step == 100 * k
        st = s.stats()
        assert st.step == 300
        assert st.vehicles > 0 or st.pedestrians > 0
    srv.stop()  # exit 0: no invariant broke
    assert "invariant broken" not in srv.stderr()


def test_batch_mode_checks_every_step():
    p = run_cli("--steps", "600", "--check-invariants", "--config", str(LARGEBLOCK), timeout=60.0)
    assert p.returncode == 0, f"exit {p.returncode}; stderr:\n{p.stderr}"
    assert "invariant broken" not in p.stderr


def test_replay_verify_checks_invariants(tmp_path):
    rec = tmp_path / "corridor.db"
    p = run_cli("--steps", "400", "--config", str(CORRIDOR), "--record", str(rec), timeout=60.0)
    assert p.returncode == 0, p.stderr
    v = run_replay("verify", str(rec), "--check-invariants", timeout=60.0)
    assert v.returncode == 0, f"exit {v.returncode}; stdout {v.stdout!r} stderr {v.stderr!r}"
    assert v.stdout.startswith("OK verified 400 ticks"), v.stdout
