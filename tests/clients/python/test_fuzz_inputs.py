"""The Python client's decoder against the C++ SDK's fuzz inputs.

Every input of tests/fuzz/corpus/fuzz_sdk_frames/ and
tests/fuzz/regressions/fuzz_sdk_frames/ is a raw server byte stream (the
`fuzz_sdk_frames` target's input format), read once the way a Session reads
a socket (tests/fuzz/python_client_frames.py, replay()). Whatever the bytes,
the client may only decode or refuse with its own errors (ProtocolError for
frames, MirrorError for an inconsistent stream); any other exception is a
defect. Deterministic: the random campaign over the same inputs is `make fuzz`.
"""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "fuzz"))
from python_client_frames import inputs, replay  # noqa: E402

INPUTS = inputs()


def source(path: pathlib.Path) -> str:
    return path.parent.parent.name  # corpus or regressions


def test_the_inputs_are_there():
    assert len(INPUTS) > 100, "the fuzz_sdk_frames seed corpus is missing"
    assert "regress-misaligned-double-vector.bin" in {p.name for p in INPUTS}


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: f"{source(p)}/{p.name}")
def test_decoding_an_input_ends_in_a_message_or_a_client_error(path):
    replay(path.read_bytes())


def test_real_sessions_in_the_corpus_decode_without_error():
    # The streams recorded from real servers (tests/fuzz/make_corpus.py) decode whole.
    sessions = [p for p in INPUTS if source(p) == "corpus" and p.name.endswith("-stream.bin")]
    assert sessions, "no recorded session streams in the corpus"
    for path in sessions:
        decoded, error = replay(path.read_bytes())
        assert error is None, f"{path.name}: {error}"
        assert decoded > 1, path.name
