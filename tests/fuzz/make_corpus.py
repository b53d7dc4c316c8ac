#!/usr/bin/env python3
"""Regenerates the fuzz seed corpora in tests/fuzz/corpus/ from real data.

Run through tests/fuzz/make_corpus.sh (it builds the release preset first and
sets PYTHONPATH). For each shipped scenario (configs/*.city.json) it starts the
real bustle-server (manual clock, its own snapshot file and session
recording), speaks to it with the Python client's codec (the frames the
integration tests send: Hello, Subscribe and one command of every kind), and
keeps:

  fuzz_scenario/       the scenario files as shipped
  fuzz_server_inbound/ every client frame sent (length prefix included), and
                       the whole client stream of the session
  fuzz_sdk_frames/     the first frame of every server message type received,
                       and a stream of Welcome + baseline + a few Deltas
  fuzz_snapshot/       the snapshot file (a checkpoint and a save), compacted
  fuzz_recording/      the session recording (initial, periodic and restore
                       keyframes, every command), compacted

Snapshot and recording files are kept only for scenarios whose files stay
under MAX_FILE_BYTES (the default city's 65 536-slot checkpoint is 0.6 MiB;
the corridor and large-block cities give files of tens of KiB).
Existing seeds of these names are overwritten; regression inputs
(regress-*) are never touched.
"""

import argparse
import os
import shutil
import signal
import socket
import sqlite3
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

from bustle_client import BustleTimeout, Session
from bustle_client import _wire as w

MAX_FILE_BYTES = 128 * 1024
MAX_SEED_BYTES = 100 * 1024


class TapSocket:
    """A socket that keeps a copy of every byte sent and received."""

    def __init__(self, sock):
        self._sock = sock
        self.sent = bytearray()
        self.received = bytearray()

    def sendall(self, data):
        self.sent += data
        return self._sock.sendall(data)

    def recv(self, n):
        data = self._sock.recv(n)
        self.received += data
        return data

    def __getattr__(self, name):
        return getattr(self._sock, name)


def frames(stream: bytes):
    """Splits a byte stream into its frames (prefix included)."""
    out, at = [], 0
    while at + 4 <= len(stream):
        (n,) = struct.unpack_from("<I", stream, at)
        if at + 4 + n > len(stream):
            break
        out.append(bytes(stream[at:at + 4 + n]))
        at += 4 + n
    return out


def server_message_name(frame: bytes) -> str:
    root = w.ServerFrame.ServerFrame.GetRootAs(frame[4:], 0)
    names = {v: k for k, v in vars(w.ServerMessage.ServerMessage).items() if not k.startswith("_")}
    return names.get(root.MessageType(), f"type{root.MessageType()}")


def commands_for(welcome):
    lanes = [lane.id for lane in welcome.lanes]
    first = lanes[0] if lanes else "lane0"
    return [
        ("QueryStats", {}),
        ("Step", {"count": 2}),
        ("SetPedestrianTarget", {"count": 24}),
        ("SetObservers", {"points": [(10.0, 0.0), (0.0, 0.0, 1.8, 3.14)]}),
        ("SetHour", {"hour": 12.0}),
        ("SetTimeScale", {"scale": 60}),
        ("SetLifecycle", {}),
        ("SpawnPedestrian", {"priority": "story", "route": [first]}),
        ("LifecycleBatch", {"ops": [("spawn", {"priority": "quest"}), ("despawn", (4, 1))]}),
        ("Step", {"count": 3}),
        ("QuerySpawn", {"handle": 1}),
        ("CancelSpawn", {"handle": 2}),
        ("QueryEntity", {"index": 1, "generation": 1}),
        ("ForceFull", {"index": 1, "generation": 1, "on": True}),
        ("ReportAttached", {"index": 1, "generation": 1}),
        ("DespawnEntity", {"index": 2, "generation": 1}),
        ("GarageRequest", {"garage": "g0", "request_id": "fuzz1", "prototype": "sedan",
                           "lane": first, "priority": 50}),
        ("CancelGarageRequest", {"garage": "g0", "request_id": "fuzz1"}),
        ("SetVehicleStrategy", {"index": 3, "generation": 1, "strategy": "Parked"}),
        ("QueryVehicle", {"index": 3, "generation": 1}),
        ("QueryGarages", {}),
        ("QuerySignals", {}),
        ("QueryZones", {}),
        ("QueryPopulation", {}),
        ("Checkpoint", {"name": "cp"}),
        ("Save", {"name": "sv"}),
        ("Step", {"count": 4}),
        ("ListSnapshots", {}),
        ("QueryJob", {"job_id": 1}),
        ("Restore", {"name": "cp"}),
        ("Step", {"count": 2}),
        ("Pause", {}),
        ("Resume", {}),
        ("DeleteSnapshot", {"name": "absent"}),
        ("Step", {"count": 2}),
    ]


def run_command(s, name, fields):
    """Manual clock: a world command is answered after the next step, a
    snapshot job finishes at a step boundary; step until each is done."""
    rid = s.send_command(name, **fields)
    try:
        r = s.wait_result(rid, timeout=0.3)
    except BustleTimeout:
        s.step(1)
        r = s.wait_result(rid, timeout=3)
    if r.job is not None and not r.job.terminal:
        for _ in range(4):
            try:
                s.wait_job(r, timeout=0.5)
                return
            except BustleTimeout:
                s.step(1)


def run_session(server: str, config: Path, tmp: Path):
    snap, rec = tmp / "snap.db", tmp / "rec.db"
    args = [server, "--config", str(config), "--port", "0", "--clock", "manual",
            "--snapshot-db", str(snap), "--record", str(rec), "--record-keyframe-steps", "10",
            "--log-level", "off"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        line = proc.stdout.readline().decode()
        if not line.startswith("bustle-server listening on "):
            raise SystemExit(f"make_corpus: {config.name}: server did not start: {line!r}")
        port = int(line.rsplit(":", 1)[1])
        tap = TapSocket(socket.create_connection(("127.0.0.1", port), timeout=10))
        with Session(tap, timeout=10) as s:
            welcome = s.hello("fuzz-corpus", role="operator")
            s.subscribe()
            s.next_delta()
            for name, fields in commands_for(welcome):
                run_command(s, name, fields)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
    return bytes(tap.sent), bytes(tap.received), snap, rec


def compact(src: Path, dst: Path) -> bool:
    """Writes `src` (WAL merged) to `dst` as one small file: rollback journal,
    512-byte pages (most tables hold a row or two, so 4 KiB pages would be
    mostly empty). False, and no file, if it is still over MAX_FILE_BYTES."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.exists():
        dst.unlink()
    con = sqlite3.connect(src)
    con.execute("VACUUM INTO ?", (str(dst),))
    con.close()
    con = sqlite3.connect(dst)
    con.execute("PRAGMA journal_mode=DELETE")
    con.execute("PRAGMA page_size=512")
    con.execute("VACUUM")
    con.close()
    if dst.stat().st_size > MAX_FILE_BYTES:
        print(f"make_corpus: {dst.name}: {dst.stat().st_size} bytes, over {MAX_FILE_BYTES}: not kept")
        dst.unlink()
        return False
    return True


def write(path: Path, data: bytes):
    if len(data) > MAX_SEED_BYTES:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", required=True)
    ap.add_argument("--source", default=str(Path(__file__).resolve().parents[2]))
    args = ap.parse_args()
    source = Path(args.source)
    corpus = source / "tests" / "fuzz" / "corpus"
    for config in sorted((source / "configs").glob("*.city.json")):
        stem = config.name.split(".")[0]
        write(corpus / "fuzz_scenario" / config.name, config.read_bytes())
        with tempfile.TemporaryDirectory() as d:
            sent, received, snap, rec = run_session(args.server, config, Path(d))
            client_frames = frames(sent)
            for i, f in enumerate(client_frames):
                write(corpus / "fuzz_server_inbound" / f"{stem}-{i:02d}.bin", f)
            write(corpus / "fuzz_server_inbound" / f"{stem}-session.bin", sent)
            # Every CommandResult (each command's reply differs), the first
            # three Deltas (the baseline and two steps), the first of the rest.
            kept = {}
            server_frames = frames(received)
            for f in server_frames:
                name = server_message_name(f)
                n = kept.get(name, 0)
                if name == "CommandResult" or (name == "Delta" and n < 3) or n == 0:
                    write(corpus / "fuzz_sdk_frames" / f"{stem}-{name}-{n:02d}.bin", f)
                kept[name] = n + 1
            write(corpus / "fuzz_sdk_frames" / f"{stem}-stream.bin", b"".join(server_frames[:6]))
            if compact(snap, corpus / "fuzz_snapshot" / f"{stem}.sqlite"):
                print(f"make_corpus: {stem}: snapshot kept")
            if compact(rec, corpus / "fuzz_recording" / f"{stem}.sqlite"):
                print(f"make_corpus: {stem}: recording kept")
            print(f"make_corpus: {stem}: {len(client_frames)} client frames, "
                  f"{len(server_frames)} server frames ({sorted(kept)})")


if __name__ == "__main__":
    main()
