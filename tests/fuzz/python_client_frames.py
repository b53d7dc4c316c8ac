#!/usr/bin/env python3
"""Fuzzes the Python client's decoder with the C++ SDK's fuzz inputs.

    python_client_frames.py --seconds N [--seed S] [--work DIR]

The inputs are those of the `fuzz_sdk_frames` target (tests/fuzz/corpus/ and
tests/fuzz/regressions/, raw server byte streams). Each is mutated (byte
flips, random bytes, truncation, duplicated or removed ranges, splices of two
inputs) with a PRNG seeded by --seed (default: the clock; printed, so a run
can be repeated) and read the way a Session reads a socket: see replay().
Any exception other than the client's own ProtocolError or MirrorError is a
finding: the input is written to DIR/artifacts/ and the run exits 1.

`make fuzz` runs this beside the libFuzzer targets; `make test` replays the
unmutated inputs once (tests/clients/python/test_fuzz_inputs.py).
"""
import argparse
import pathlib
import random
import sys
import time
import traceback

from bustle_client import codec
from bustle_client.messages import Delta, ProtocolError, Welcome
from bustle_client.mirror import EntityMirror, MirrorError

FUZZ = pathlib.Path(__file__).resolve().parent


def inputs():
    """Every checked-in fuzz_sdk_frames input, in name order."""
    return sorted(p for d in ("corpus", "regressions") for p in (FUZZ / d / "fuzz_sdk_frames").glob("*")
                  if p.is_file())


def replay(stream: bytes):
    """Decodes STREAM as a client would: FrameDecoder, decode_server_frame,
    Welcome and Delta into an EntityMirror, then every entity's pose.
    Returns (frames decoded, the client error that ended it or None); any
    other exception propagates: it is a defect."""
    decoder = codec.FrameDecoder()
    mirror = EntityMirror(strict=True)
    decoded = 0
    try:
        decoder.feed(stream)
        while (payload := decoder.next()) is not None:
            msg = codec.decode_server_frame(payload)
            decoded += 1
            if isinstance(msg, Welcome):
                mirror = EntityMirror(msg, strict=True)
            elif isinstance(msg, Delta):
                mirror.apply(msg)
                if mirror.welcome is not None:
                    for key in list(mirror):
                        mirror.pose(key)
    except (ProtocolError, MirrorError) as error:
        return decoded, error  # refused with the client's own error: what it promises
    return decoded, None


def mutate(rng: random.Random, data: bytes, other: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        op = rng.randrange(6)
        at = rng.randrange(len(out) + 1)
        if op == 0 and out:  # flip bits
            at = min(at, len(out) - 1)
            out[at] ^= 1 << rng.randrange(8)
        elif op == 1 and out:  # a random byte
            at = min(at, len(out) - 1)
            out[at] = rng.randrange(256)
        elif op == 2:  # truncate
            del out[at:]
        elif op == 3:  # duplicate a range
            end = min(len(out), at + rng.randint(1, 64))
            out[at:at] = out[at:end]
        elif op == 4:  # remove a range
            del out[at:at + rng.randint(1, 64)]
        else:  # splice another input's bytes in
            start = rng.randrange(len(other) + 1)
            out[at:at] = other[start:start + rng.randint(1, 256)]
    return bytes(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--work", type=pathlib.Path, default=pathlib.Path("build/fuzz/fuzz-work/python_client_frames"))
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else time.time_ns() % (1 << 32)
    rng = random.Random(seed)
    seeds = [p.read_bytes() for p in inputs()]
    if not seeds:
        print("python_client_frames: no inputs in tests/fuzz/*/fuzz_sdk_frames", file=sys.stderr)
        return 2
    runs = 0
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        data = mutate(rng, rng.choice(seeds), rng.choice(seeds))
        runs += 1
        try:
            replay(data)
        except Exception:  # noqa: BLE001 - every other exception is the finding
            artifacts = args.work / "artifacts"
            artifacts.mkdir(parents=True, exist_ok=True)
            path = artifacts / f"crash-seed{seed}-run{runs}.bin"
            path.write_bytes(data)
            traceback.print_exc()
            print(f"python_client_frames: FINDING after {runs} runs (seed {seed}); input in {path}",
                  file=sys.stderr)
            return 1
    print(f"python_client_frames: {runs} runs, seed {seed}, no finding")
    return 0


if __name__ == "__main__":
    sys.exit(main())
