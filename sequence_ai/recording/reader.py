"""Reading a recording back: `read_run(path)` -> `RunRecord`, for replay, plots and tests.

The file is read front to back (no index needed), so a file whose writer was killed reads up to
its last complete chunk; `complete` says whether the writer finished it, and `damage` what
stopped the read early. A file is untrusted input: it is read within `ReadLimits` (walk.py), and
one that is malformed or over them raises `RecordingRefused`, naming the file and what.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

from .messages import CAMERA_PREFIX, FRESHNESS, TOPICS, known
from .sink import STATS_METADATA, require_mcap
from .walk import Budget, CutShort, ReadLimits, RecordingRefused, records

__all__ = ["Answer", "Command", "Frame", "ReadLimits", "RecordingRefused", "RunRecord", "read_run"]

_KEPT = frozenset(TOPICS.values())  # the topics decoded (camera frames: only with frames=True)


@dataclass(frozen=True)
class Command:
    t_ns: int
    values: Tuple[float, ...]
    rid: str
    row_index: int
    action_index: int
    age_s: Optional[float] = None  # its chunk's observation to act(); None: not known, or a file from before
    lateness_s: Optional[float] = None  # act() past the moment the row was computed for; None likewise


@dataclass(frozen=True)
class Answer:
    t_ns: int
    sent_ns: int
    rid: str
    latency_s: float
    steps: Tuple[Tuple[float, ...], ...]
    first_row: int
    rows_installed: int
    action_space: str
    error: str
    control_hz: float = math.nan  # the rate the chunk was answered for (NaN for a failed request)


@dataclass(frozen=True)
class Frame:
    t_ns: int
    view: str
    format: str
    data: bytes


@dataclass
class RunRecord:
    """Everything one recording holds, in file order. Times are UNIX-epoch ns (log time)."""

    path: str
    complete: bool = False
    damage: Optional[str] = None
    topics: Dict[str, Tuple[str, int]] = field(default_factory=dict)  # topic -> (schema name, messages)
    metadata: Dict[str, Dict[str, str]] = field(default_factory=dict)
    run: Optional[Any] = None
    requests: List[Any] = field(default_factory=list)
    answers: List[Answer] = field(default_factory=list)
    commands: List[Command] = field(default_factory=list)
    holds: List[Tuple[int, str, int]] = field(default_factory=list)  # (t_ns, reason, actions so far)
    instructions: List[Tuple[int, str]] = field(default_factory=list)
    joint_states: List[Any] = field(default_factory=list)
    arm_commands: List[Any] = field(default_factory=list)  # JointState: what the ROS node published
    feedback: List[Any] = field(default_factory=list)
    frames: List[Frame] = field(default_factory=list)  # only with read_run(..., frames=True)
    frame_counts: Dict[str, int] = field(default_factory=dict)  # camera topic's view -> frames in the file
    outcome: Optional[Any] = None
    outcome_ns: Optional[int] = None

    @property
    def recording_error(self) -> str:
        """The write error that stopped the recording early (a full disk), from the file's
        metadata; "" when it has none."""
        return self.metadata.get(STATS_METADATA, {}).get("error", "")

    @property
    def start_ns(self) -> Optional[int]:
        if self.run is not None:
            return _ns(self.run.header.stamp)
        times = [c.t_ns for c in self.commands] + [a.sent_ns for a in self.answers]
        return min(times) if times else None


def _ns(stamp: Any) -> int:
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def read_run(path: Union[str, Path], *, frames: bool = False, limits: Optional[ReadLimits] = None) -> RunRecord:
    """Decode the recording at `path`. With frames=True the camera frames' bytes are kept too.
    RecordingRefused when the file is malformed or over `limits` (default: ReadLimits())."""
    require_mcap()
    from mcap.records import Channel, Footer, Message, Metadata, Schema
    from mcap_ros2.decoder import DecoderFactory

    record = RunRecord(path=str(path))
    schemas: Dict[int, Any] = {}
    channels: Dict[int, Any] = {}
    decoders: Dict[int, Any] = {}
    factory = DecoderFactory()
    budget = Budget(limits or ReadLimits())
    with open(path, "rb") as stream:
        try:
            for item in records(stream, os.fstat(stream.fileno()).st_size, budget):
                if isinstance(item, Message):
                    channel = channels.get(item.channel_id)
                    if channel is None:
                        raise RecordingRefused(f"a message on channel {item.channel_id}, which the file never declared")
                    name, count = record.topics[channel.topic]
                    record.topics[channel.topic] = (name, count + 1)
                    camera = channel.topic.startswith(CAMERA_PREFIX)
                    if camera:
                        view = channel.topic[len(CAMERA_PREFIX):].rsplit("/", 1)[0]
                        record.frame_counts[view] = record.frame_counts.get(view, 0) + 1
                    if camera and frames:
                        _decoded(record, channel, item, decoders, schemas, factory)
                    elif channel.topic in _KEPT:
                        budget.decode(len(item.data), channel.topic)
                        _decoded(record, channel, item, decoders, schemas, factory)
                elif isinstance(item, Schema):
                    schemas[item.id] = item
                elif isinstance(item, Channel):
                    channels[item.id] = item
                    record.topics.setdefault(item.topic, (getattr(schemas.get(item.schema_id), "name", ""), 0))
                elif isinstance(item, Metadata):
                    record.metadata[item.name] = dict(item.metadata)
                elif isinstance(item, Footer):
                    record.complete = True
        except CutShort as exc:  # where a writer that died stopped: what came before stands
            record.damage = str(exc)
        except RecordingRefused as exc:
            raise RecordingRefused(f"{path}: {exc}") from None
    return record


def _decoded(record: RunRecord, channel: Any, message: Any, decoders: Dict[int, Any], schemas: Dict[int, Any],
             factory: Any) -> None:
    """Decode `message` with its channel's own schema and keep it; one that does not decode, or is
    not the type its topic carries, is refused."""
    try:
        decode = decoders.get(channel.id)
        if decode is None:
            decode = decoders[channel.id] = factory.decoder_for(channel.message_encoding,
                                                                 schemas.get(channel.schema_id))
        if decode is None:
            raise ValueError(f"no decoder for its {channel.message_encoding!r} encoding")
        _take(record, channel.topic, message.log_time, decode(message.data))
    except Exception as exc:
        why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise RecordingRefused(f"a {channel.topic} message that does not read as its type ({why[:200]})") from None


def _take(record: RunRecord, topic: str, log_ns: int, message: Any) -> None:
    if topic == TOPICS["command"]:
        record.commands.append(Command(log_ns, tuple(message.values), message.rid, message.row_index,
                                       message.action_index, known(getattr(message, "age_s", None)),
                                       known(getattr(message, "lateness_s", None))))
    elif topic == TOPICS["chunk"]:
        dims = message.steps.layout.dim
        width = dims[1].size if len(dims) > 1 else 0
        data = list(message.steps.data)
        steps = tuple(tuple(data[i:i + width]) for i in range(0, len(data), width)) if width else ()
        record.answers.append(Answer(log_ns, _ns(message.sent), message.rid, message.latency_s, steps,
                                     message.first_row, message.rows_installed, message.action_space, message.error,
                                     message.control_frequency_hz))
    elif topic == TOPICS["request"]:
        record.requests.append(message)
    elif topic == TOPICS["hold"]:
        record.holds.append((log_ns, message.reason, message.actions))
    elif topic == TOPICS["instruction"]:
        record.instructions.append((log_ns, message.data))
    elif topic == TOPICS["joints"]:
        record.joint_states.append(message)
    elif topic == TOPICS["arm"]:
        record.arm_commands.append(message)
    elif topic == TOPICS["feedback"]:
        record.feedback.append(_with_freshness(message))
    elif topic == TOPICS["run"]:
        record.run = message
    elif topic == TOPICS["outcome"]:
        record.outcome, record.outcome_ns = _with_freshness(message), log_ns
    elif topic.startswith(CAMERA_PREFIX):
        record.frames.append(Frame(log_ns, message.header.frame_id, message.format, bytes(message.data)))


def _with_freshness(message: Any) -> Any:
    """The actions' freshness fields of an outcome or progress message as RunOutcome has them:
    a float, or None where not known (NaN in the file, or a file written before them)."""
    for name in FRESHNESS:
        setattr(message, name, known(getattr(message, name, None)))
    return message
