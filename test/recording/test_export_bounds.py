"""`sequence-ai export --format lerobot` on recordings that ask for more than it builds (issue #38):
a rate of 1e-7 Hz, frames of 9000×9000 and 400 megapixels, a frame that is not an image, NaN, ±inf
and 1e308 in the actions, and exports over the budget. Each ends in one line per file naming the
field, or a partial export whose last line names what was not exported, never a traceback, under
an address-space limit (RLIMIT_AS) that the unbounded export broke: the test shows it does.

lerobot 0.6.1 runs in the scratch venv .lerobot-venv/ (test/scratch.py); its import alone (torch)
maps about 4 GiB of address space, so the limit is that plus one GiB, which a normal export fits in
(the good recording beside each hostile one is written under it)."""

from __future__ import annotations

import json
import math
import resource
import subprocess
import textwrap
from pathlib import Path
from typing import List, Tuple

import pytest

pytest.importorskip("mcap", reason="needs the [record] extra")
from _crafted import black_png
from _runs import jpeg, scripted_run
from scratch import ROOT, scratch_env, scratch_python

from sequence_ai.recording import Recorder

pytestmark = [pytest.mark.slow, pytest.mark.scratch, pytest.mark.timeout(2400)]  # the first may wait for the venv

MEMORY = 6 << 30  # address space of each export here: lerobot's import maps ~4.9 GiB of it under this limit


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def _run(python: str, *args: str) -> Tuple[int, List[str], List[str]]:
    done = subprocess.run([python, *args], capture_output=True, text=True, env=scratch_env(), timeout=600,
                          cwd=str(ROOT), preexec_fn=_limited)
    return done.returncode, done.stdout.splitlines(), [line for line in done.stderr.splitlines() if line.strip()]


def _export(python: str, *args: object) -> Tuple[int, List[str], List[str]]:
    code, out, err = _run(python, "-m", "sequence_ai", "export", "--format", "lerobot", *(str(a) for a in args))
    assert not any("Traceback" in line for line in err), "\n".join(err[-30:])
    return code, out, err


LOAD = textwrap.dedent("""
    import json, sys
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    dataset = LeRobotDataset("local/dataset", root=sys.argv[1])
    frames = [dataset[i] for i in range(len(dataset))]
    print(json.dumps({"episodes": dataset.num_episodes, "action": [f["action"].tolist() for f in frames]}))
""")


def _load(python: str, root: Path) -> dict:
    code, out, err = _run(python, "-c", LOAD, str(root))
    assert code == 0, "\n".join(err[-20:])
    return json.loads(out[-1])


def _recording(path: Path, recorder: type = Recorder, **kwargs: object) -> Path:
    with recorder(path, chunk_size=2048) as rec:
        scripted_run(rec, **kwargs)
    return path


WILD = {3: math.nan, 5: math.inf, 7: -math.inf, 9: 1e308}  # action index -> its first joint's value


class _Wild(Recorder):
    """The 4th, 6th, 8th and 10th actions' first joint: NaN, inf, -inf and 1e308 (float32's inf)."""

    def command(self, row, **kwargs):
        value = WILD.get(self._actions)
        super().command(row if value is None else [value, *row[1:]], **kwargs)


@pytest.fixture(scope="module")
def python() -> str:
    return scratch_python("lerobot")


@pytest.fixture
def good(tmp_path) -> Path:
    return _recording(tmp_path / "good.mcap", reason="completed")


def test_a_rate_no_export_builds_is_refused_in_one_line_with_or_without_fps(python, tmp_path, good):
    slow = _recording(tmp_path / "slow.mcap", hz=1e-7)  # 15 actions at 1e-7 Hz: 4.2e9 frames at 30 fps
    line = f"error: {slow}: refused: control_hz is 1e-07 Hz, outside what an export builds (0.1 to 1000 Hz)"
    code, out, err = _export(python, slow, good, tmp_path / "at30", "--fps", 30)
    assert (code, err) == (2, [line])
    assert out[-1] == (f"1 episode(s), 29 frames written to {tmp_path / 'at30'}; 0 skipped; not exported: slow.mcap "
                       "(refused: control_hz)")
    assert _load(python, tmp_path / "at30")["episodes"] == 1
    code, out, err = _export(python, slow, tmp_path / "default_fps")  # it was a ZeroDivisionError
    assert (code, err) == (2, [line]) and not (tmp_path / "default_fps").exists()
    assert out == [f"0 episode(s), 0 frames written to {tmp_path / 'default_fps'}; 0 skipped; not exported: "
                   "slow.mcap (refused: control_hz)"]
    code, _, err = _export(python, good, tmp_path / "x", "--fps", 0)
    assert code == 2 and err[-1].endswith("argument --fps: must be a whole number from 1 to 1000 (got 0)")


def test_frames_too_large_to_decode_are_refused_from_their_headers(python, tmp_path, good):
    big, giant = black_png(9000, 9000), black_png(20000, 20000)
    huge = _recording(tmp_path / "huge.mcap", chunks=8, frame=lambda seed: big)  # 16 frames, 3.9 GB decoded
    one_giant = _recording(tmp_path / "giant.mcap", frame=lambda seed: giant if seed == 20 else jpeg(seed))
    assert huge.stat().st_size < 100_000 and one_giant.stat().st_size < 100_000
    code, out, err = _export(python, huge, one_giant, good, tmp_path / "dataset")
    assert code == 2
    assert err == [f"error: {huge}: refused: frame 0 of view exterior_image_1_left is 9000×9000 pixels, over what an "
                   "export decodes (at most 8192 a side and 8,294,400 in all)",
                   f"error: {one_giant}: refused: frame 2 of view exterior_image_1_left is 20000×20000 pixels, over "
                   "what an export decodes (at most 8192 a side and 8,294,400 in all)"]
    assert out[-1] == (f"1 episode(s), 15 frames written to {tmp_path / 'dataset'}; 0 skipped; not exported: "
                       "huge.mcap (refused: frame size), giant.mcap (refused: frame size)")
    assert _load(python, tmp_path / "dataset")["episodes"] == 1


def test_the_limit_is_one_the_unbounded_export_broke(python):
    """Under the same limit, lerobot imported as the export imports it, decoding the sixteen
    9000×9000 frames as the export did before it checked them fails: the limit bounds something."""
    code, out, err = _run(python, "-c", textwrap.dedent("""
        import io, sys
        sys.path.insert(0, "test/recording")
        import numpy as np
        from PIL import Image
        from _crafted import black_png
        from sequence_ai.recording.to_lerobot import require_lerobot
        require_lerobot()
        png, held = black_png(9000, 9000), []
        try:
            for _ in range(16):
                held.append(np.asarray(Image.open(io.BytesIO(png)).convert("RGB")))
        except MemoryError:
            print("MemoryError after", len(held))
    """))
    assert code == 0 and out and out[-1].startswith("MemoryError after"), (out, err[-5:])


def test_a_frame_that_is_not_an_image_skips_its_file_and_the_rest_are_exported(python, tmp_path, good):
    bad = _recording(tmp_path / "bad.mcap", frame=lambda seed: b"not an image at all" if seed == 11 else jpeg(seed))
    code, out, err = _export(python, bad, good, tmp_path / "dataset")
    assert code == 1
    assert err == [f"error: {bad}: frame 1 of view wrist_image_left is not an image (no format Pillow reads; its "
                   "first bytes: b'not an image')"]
    assert out[-1] == (f"1 episode(s), 15 frames written to {tmp_path / 'dataset'}; 0 skipped; not exported: "
                       "bad.mcap (a bad frame)")
    assert _load(python, tmp_path / "dataset")["episodes"] == 1


def test_values_float32_cannot_hold_are_refused_by_default_and_flagged_when_asked(python, tmp_path, good):
    wild = _recording(tmp_path / "wild.mcap", recorder=_Wild)
    first = "action holds 4 value(s) not finite or beyond float32 (the first: nan, panda_joint1 at step 3)"
    code, out, err = _export(python, wild, good, tmp_path / "refused")
    assert code == 2
    assert err == [f"error: {wild}: refused: {first}. Refusing is the default; --bad-values flag writes them as they "
                   "are (NaN, ±inf) and flags the episode in meta/sequence_ai_episodes.jsonl"]
    assert out[-1].endswith("not exported: wild.mcap (refused: action values)")

    code, out, err = _export(python, wild, tmp_path / "flagged", "--bad-values", "flag")
    assert code == 0
    assert err == [f"warning: {wild}: {first}: written as they are (--bad-values flag), flagged in "
                   "meta/sequence_ai_episodes.jsonl"]
    [line] = (tmp_path / "flagged" / "meta" / "sequence_ai_episodes.jsonl").read_text().splitlines()
    assert json.loads(line)["values_not_finite_or_beyond_float32"] == {"action": 4}
    written = [row[0] for row in _load(python, tmp_path / "flagged")["action"]]
    assert math.isnan(written[3]) and written[5] == math.inf and written[7] == -math.inf and written[9] == math.inf


def test_an_export_over_the_budget_writes_nothing_and_the_budget_can_be_raised(python, tmp_path, good):
    other = _recording(tmp_path / "other.mcap")
    code, out, err = _export(python, good, other, tmp_path / "dataset", "--max-frames", 20)
    assert (code, out) == (2, [])
    assert err == [f"error: refused: the 2 recordings to export make 30 frames, over the budget of 20 (--max-frames "
                   f"raises it); the largest is {good} (15 frames, 270 KiB); nothing written"]
    assert not (tmp_path / "dataset").exists()
    code, out, err = _export(python, good, tmp_path / "dataset", "--max-frames", 10)
    assert code == 2 and err == [f"error: {good}: refused: 15 actions at 15 Hz make 15 frames at 15 fps, over the "
                                 "budget of 10 (--max-frames raises it)"]
    code, out, err = _export(python, good, other, tmp_path / "dataset", "--max-gib", 0.0001)
    assert code == 2 and err == [f"error: {good}: refused: its 15 frames are 270 KiB of decoded images, over "
                                 "the budget of 105 KiB (--max-gib raises it)", f"error: {other}: refused: its 15 "
                                 "frames are 270 KiB of decoded images, over the budget of 105 KiB (--max-gib "
                                 "raises it)"]
    code, out, err = _export(python, good, other, tmp_path / "dataset", "--max-gib", 0.0004)
    assert code == 2 and err == [f"error: refused: the 2 recordings to export make 540 KiB of decoded images, "
                                 "over the budget of 419 KiB (--max-gib raises it); the largest is "
                                 f"{good} (15 frames, 270 KiB); nothing written"]
    code, out, err = _export(python, good, other, tmp_path / "dataset", "--max-frames", 30)
    assert (code, err) == (0, []) and out[-1] == f"2 episode(s), 30 frames written to {tmp_path / 'dataset'}; 0 skipped"
