"""Episodes into a LeRobot dataset, written by the `lerobot` package's own writer ([lerobot] extra).

    dataset = LeRobotTarget(out_dir)             # a new dataset, or the one already there (appended)
    problem = dataset.mismatch(episode)          # None, or one line: another robot's shape
    index = dataset.write(episode, advance)      # LeRobotDataset.create/resume, add_frame, save_episode
    dataset.close()                              # finalize(): the parquet footers

Per frame: `observation.images.<view>` (the frames the model was sent, decoded, at the size sent),
`observation.state`, `action` (the model's action space) and, for displacement rows, the command
the node published (`action.joint_position` or `action.joint_velocity`), and `task`. Images are
stored as images (PNG, lossless), not video: the pixels are the ones the model saw.

LeRobot's episode metadata has no field of our own, so what it cannot hold — the run each episode
came from and how that run ended — is one JSON line per episode in `meta/sequence_ai_episodes.jsonl`
beside LeRobot's own `meta/` files (LeRobot ignores it); it is also how an export that runs again
knows which runs are in already.
"""

from __future__ import annotations

import io
import json
import logging
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from .episode import Episode

__all__ = ["EPISODES_FILE", "LeRobotTarget", "metadata_line", "require_lerobot"]

EPISODES_FILE = "meta/sequence_ai_episodes.jsonl"
LEROBOT_INSTALL = "pip install 'sequence-ai[lerobot]'"
LEROBOT_PYTHON = (3, 12)  # lerobot 0.6's own code uses 3.12 syntax
PENDING_IMAGE_BYTES = 256 << 20  # decoded frames handed to lerobot's image writer threads, not yet written


def require_lerobot() -> None:
    """ImportError naming what is missing when lerobot's dataset writer cannot be imported: the
    Python version first (the extra installs no lerobot on an older one), else the package."""
    if sys.version_info < LEROBOT_PYTHON:
        version = ".".join(map(str, sys.version_info[:3]))
        raise ImportError(f"export --format lerobot needs Python {'.'.join(map(str, LEROBOT_PYTHON))} or newer, and "
                          f"this is Python {version}: lerobot 0.6 does not run on older ones, so "
                          f"'sequence-ai[lerobot]' installs no lerobot here. {_newer_python_hint()}")
    # lerobot warns at import, with a long traceback, when torchcodec finds no FFmpeg libraries:
    # that decodes video, and an export writes images only.
    logging.getLogger("lerobot.utils.import_utils").setLevel(logging.ERROR)
    try:
        from lerobot.datasets.lerobot_dataset import LeRobotDataset  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"export --format lerobot needs the lerobot package ({exc}); install it with: "
                          f"{LEROBOT_INSTALL}") from None
    import datasets

    datasets.disable_progress_bars()  # its own bars on each save, beside the export's one


def _newer_python_hint() -> str:
    """How to run the export on Python 3.12: in a source checkout, its scratch venv (scripts/scratch_venv.py
    makes .lerobot-venv/ from requirements/scratch/lerobot.txt); else an environment of one's own."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "requirements" / "scratch" / "lerobot.txt").is_file():
        return f"Run it from a Python 3.12 environment with {LEROBOT_INSTALL}"
    python = root / ".lerobot-venv" / "bin" / "python"
    first = "" if python.is_file() else f"{root / 'scripts' / 'workspace.sh'} scratch lerobot (once), then "
    return (f"In this checkout: {first}PYTHONPATH={root} {python} -m sequence_ai export --format lerobot "
            "RECORDING... OUT_DIR")


def features_of(episode: Episode, image_shapes: Dict[str, Tuple[int, int, int]]) -> Dict[str, Dict[str, Any]]:
    features: Dict[str, Dict[str, Any]] = {}
    for view in episode.views:
        features[f"observation.images.{view}"] = {"dtype": "image", "shape": image_shapes[view],
                                                  "names": ["height", "width", "channels"]}
    features["observation.state"] = _vector(episode.state_names)
    features["action"] = _vector(episode.action_names)
    if episode.joint_command_kind:
        features[f"action.{episode.joint_command_kind}"] = _vector(episode.joint_command_names)
    return features


def _vector(names: Tuple[str, ...]) -> Dict[str, Any]:
    return {"dtype": "float32", "shape": (len(names),), "names": list(names)}


def image_shape(data: bytes) -> Tuple[int, int, int]:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return (image.height, image.width, 3)


def _image_shapes(episode: Episode) -> Dict[str, Tuple[int, int, int]]:
    """Each view's shape, from its first frame a step uses (export_limits.py checked those)."""
    return {v: image_shape(episode.images[v][episode.steps[0].frames[i]]) for i, v in enumerate(episode.views)}


def _pixels(data: bytes) -> Any:
    import numpy as np
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("RGB"), dtype=np.uint8)


class LeRobotTarget:
    """The dataset at `root`: created with the first episode written, or resumed if it is there."""

    def __init__(self, root: Path, *, repo_id: Optional[str] = None, robot_type: Optional[str] = None):
        self.root = Path(root)
        self.repo_id = repo_id or f"local/{self.root.resolve().name}"
        self.robot_type = robot_type
        self._dataset: Any = None
        self.info: Optional[Dict[str, Any]] = None
        self.episodes: Dict[str, int] = {}  # run key -> episode index, from EPISODES_FILE
        info = self.root / "meta" / "info.json"
        if info.is_file():
            self.info = json.loads(info.read_text())
            self.episodes = _episodes_in(self.root / EPISODES_FILE)
        elif self.root.exists() and (not self.root.is_dir() or any(self.root.iterdir())):
            raise ValueError(f"{self.root} exists and is not a LeRobot dataset (no meta/info.json)")

    def mismatch(self, episode: Episode) -> Optional[str]:
        """One line if `episode` does not fit the dataset (another robot's shape, another fps)."""
        if self.info is None:
            return None
        theirs = self.info.get("features", {})
        ours = features_of(episode, _image_shapes(episode))
        if int(self.info.get("fps", 0)) != episode.fps:
            return f"the dataset at {self.root} is at {self.info.get('fps')} fps, this episode at {episode.fps}"
        for name, feature in ours.items():
            there = theirs.get(name)
            if there is None:
                return f"the dataset at {self.root} has no {name} (it has {', '.join(_own(theirs))})"
            if tuple(there.get("shape", ())) != tuple(feature["shape"]) or there.get("names") != feature["names"]:
                return (f"the dataset at {self.root} is of another robot's shape: {name} is "
                        f"{_described(there)} there, {_described(feature)} here")
        extra = [name for name in _own(theirs) if name not in ours]
        if extra:
            return f"the dataset at {self.root} has {', '.join(extra)}, which this episode does not"
        return None

    def write(self, episode: Episode, advance: Callable[[int], None] = lambda n: None,
              flagged: Optional[Dict[str, int]] = None) -> int:
        """Add `episode` (one add_frame per step, then save_episode); its index in the dataset.
        `flagged`: per feature, values not finite or beyond float32 written as they are. Any
        error (a frame whose pixels do not decode, lerobot's own check) leaves no frame of it behind."""
        dataset = self._open(episode)
        try:
            self._add_frames(dataset, episode, advance)
        except BaseException:
            dataset.clear_episode_buffer()  # else the next episode would start with this one's frames
            raise
        index = int(dataset.meta.total_episodes)
        dataset.save_episode()
        self._remember(episode, index, flagged or {})
        return index

    @staticmethod
    def _add_frames(dataset: Any, episode: Episode, advance: Callable[[int], None]) -> None:
        decoded: Dict[str, Tuple[int, Any]] = {}  # view -> (frame index, pixels): steps move forward
        pending = 0  # bytes of decoded frames the image writer may not have written yet
        for step in episode.steps:
            frame: Dict[str, Any] = {"task": step.task}
            for view, index in zip(episode.views, step.frames):
                if view not in decoded or decoded[view][0] != index:
                    if pending > PENDING_IMAGE_BYTES:
                        _wait_for_images(dataset)
                        pending = 0
                    decoded[view] = (index, _pixels(episode.images[view][index]))
                    pending += decoded[view][1].nbytes
                frame[f"observation.images.{view}"] = decoded[view][1]
            frame["observation.state"] = _float32(step.state)
            frame["action"] = _float32(step.action)
            if episode.joint_command_kind:
                frame[f"action.{episode.joint_command_kind}"] = _float32(step.joint_command or ())
            dataset.add_frame(frame)
            advance(1)

    def close(self) -> None:
        if self._dataset is not None:
            self._dataset.finalize()
            self._dataset = None

    # -- internals -------------------------------------------------------------------------------

    def _open(self, episode: Episode) -> Any:
        if self._dataset is not None:
            return self._dataset
        from lerobot.datasets.lerobot_dataset import LeRobotDataset

        if self.info is not None:
            self._dataset = LeRobotDataset.resume(self.repo_id, root=self.root)
        else:
            if self.root.is_dir():
                self.root.rmdir()  # empty (checked): LeRobot creates the folder itself
            features = features_of(episode, _image_shapes(episode))
            self._dataset = LeRobotDataset.create(self.repo_id, episode.fps, features,
                                                  root=self.root, robot_type=self.robot_type or episode.model,
                                                  use_videos=False, image_writer_threads=2)
            self.info = json.loads((self.root / "meta" / "info.json").read_text())
        return self._dataset

    def _remember(self, episode: Episode, index: int, flagged: Dict[str, int]) -> None:
        with open(self.root / EPISODES_FILE, "a", encoding="utf-8") as out:
            out.write(json.dumps(metadata_line(episode, index, flagged), sort_keys=True) + "\n")
        self.episodes[episode.key] = index


def metadata_line(episode: Episode, index: int, flagged: Dict[str, int]) -> Dict[str, Any]:
    """The episode's line in EPISODES_FILE: numbers as numbers, booleans as booleans (a number the
    run did not measure: null), `flagged` the values --bad-values flag let through, per feature."""
    line = {"episode_index": index, "run": episode.key, "recording": episode.path, "model": episode.model,
            "control_hz": episode.control_hz, "action_space": episode.action_space, "complete": episode.complete,
            "frames": len(episode.steps), "tasks": episode.tasks, "outcome": episode.outcome,
            "values_not_finite_or_beyond_float32": dict(flagged)}
    if episode.published_names != episode.joint_command_names:  # the node's own names for the published command
        line["published_names"] = list(episode.published_names)
    return line


def _wait_for_images(dataset: Any) -> None:
    """Until lerobot's image writer threads have written what they were handed (its queue is
    unbounded: a run of large distinct frames would otherwise be held in memory)."""
    writer = getattr(getattr(dataset, "writer", None), "image_writer", None)
    if writer is not None:
        writer.wait_until_done()


def _float32(values: Any) -> Any:
    import numpy as np

    with np.errstate(over="ignore"):  # beyond float32 becomes ±inf: refused or flagged before (export_limits.py)
        return np.asarray(values, dtype=np.float32)


def _episodes_in(path: Path) -> Dict[str, int]:
    found: Dict[str, int] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                entry = json.loads(line)
                found[str(entry["run"])] = int(entry["episode_index"])
    return found


def _own(features: Dict[str, Any]) -> List[str]:
    """The features an export writes (LeRobot's own index columns left out)."""
    return [n for n in features if n.startswith(("observation.", "action"))]


def _described(feature: Dict[str, Any]) -> str:
    shape = "×".join(str(n) for n in feature.get("shape", ()))
    names = feature.get("names") or []
    if feature.get("dtype") in ("image", "video"):
        return shape
    return f"{shape} ({', '.join(str(n) for n in names)})" if names else shape
