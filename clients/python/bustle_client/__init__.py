"""Python client for the Bustle city-simulation server.

- :mod:`bustle_client.codec`: framing and FlatBuffers encode/decode
- :class:`Session`: blocking TCP session (handshake, subscribe, deltas, commands)
- :class:`EntityMirror`: entity table kept current from deltas, placing
  entities from their lane-relative motion anchors (and the retiring set and
  distant dots)
- :mod:`bustle_client.motion`: the dead-reckoning arithmetic of protocol v2
  (prediction, packed motion records, lane sampling), as the server does it
- population: spawn handles (``Session.spawn_pedestrian``, ``wait_spawn``),
  lifecycle batches (``spawn_op``, ``despawn_op``), ``EntityInfo`` and
  ``PopulationInfo`` queries

Needs the FlatBuffers modules generated at build time on ``sys.path``
(``<build>/python``; CMake target ``bustle_python_wire``).
"""

from .codec import (
    CLIENT_IDENTIFIER,
    MAX_INBOUND_FRAME_BYTES,
    SERVER_IDENTIFIER,
    SERVER_MAX_INBOUND_FRAME_BYTES,
    FrameDecoder,
    decode_server_frame,
    encode_frame,
)
from .messages import *  # noqa: F401,F403  (enums, dataclasses, exceptions)
from .messages import __all__ as _messages_all
from .mirror import EntityMirror, EntityRecord, MirroredEntity, MirrorError
from . import motion
from .session import Session

__all__ = [
    "CLIENT_IDENTIFIER",
    "SERVER_IDENTIFIER",
    "MAX_INBOUND_FRAME_BYTES",
    "SERVER_MAX_INBOUND_FRAME_BYTES",
    "FrameDecoder",
    "decode_server_frame",
    "encode_frame",
    "EntityMirror",
    "EntityRecord",
    "MirroredEntity",
    "MirrorError",
    "motion",
    "Session",
    *_messages_all,
]
