"""encode(): pass-through of encoded frames, input checks, and the missing-Pillow message."""

from __future__ import annotations

import base64
import os
import subprocess
import sys

import numpy as np
import pytest

from sequence_ai import SequencesError, encode

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_strings_pass_unchanged_and_bytes_are_only_base64_encoded():
    assert encode("already-base64") == "already-base64"
    assert base64.b64decode(encode(b"\xff\xd8raw jpeg bytes")) == b"\xff\xd8raw jpeg bytes"


def test_grayscale_and_rgba_arrays_become_rgb_jpeg():
    import io

    from PIL import Image

    for frame in (np.zeros((90, 160), np.uint8), np.zeros((90, 160, 4), np.uint8), np.zeros((90, 160, 1), np.uint8)):
        with Image.open(io.BytesIO(base64.b64decode(encode(frame)))) as image:
            assert image.mode == "RGB" and image.size == (160, 90)


def test_bad_frames_and_quality_are_named():
    with pytest.raises(TypeError, match="uint8"):
        encode(np.zeros((10, 10, 3), np.float32))
    with pytest.raises(ValueError, match="shape"):
        encode(np.zeros((10, 10, 2), np.uint8))
    with pytest.raises(TypeError, match="frame must be"):
        encode(12345)
    with pytest.raises(ValueError, match="quality"):
        encode(np.zeros((10, 10, 3), np.uint8), quality=0)


BLOCK_PILLOW = """
import sys
sys.modules['PIL'] = None
import numpy as np
import sequence_ai
for call in ({calls}):
    try:
        call()
    except ImportError as exc:
        assert isinstance(exc, sequence_ai.SequencesError), type(exc)
        print(exc)
"""


def test_arrays_and_pil_without_pillow_name_the_extra():
    calls = ("lambda: sequence_ai.encode(np.zeros((4, 4, 3), np.uint8)),"
             "lambda: sequence_ai.observation(sequence_ai.Model.from_wire({'id': 'm', 'camera_views': ['a']}),"
             " images={'a': np.zeros((4, 4, 3), np.uint8)}, joints=[], instruction='x')")
    done = subprocess.run([sys.executable, "-c", BLOCK_PILLOW.format(calls=calls)], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, env={**os.environ, "PYTHONPATH": ROOT})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    hint = "pip install 'pillow>=9.0.1' 'numpy>=1.21.5' (the [image] extra)"
    assert len(lines) == 2 and all(hint in line for line in lines), lines


def test_strings_need_no_pillow():
    script = "import sys; sys.modules['PIL'] = None; import sequence_ai; print(sequence_ai.encode(b'ok'))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert done.stdout.strip() == "b2s="


def test_missing_extra_is_a_sequences_error_class():
    from sequence_ai._vision._encode import ImageExtraMissing

    assert issubclass(ImageExtraMissing, SequencesError) and issubclass(ImageExtraMissing, ImportError)
