"""Building requests for the platform tests: frames, observations, pinned worker clients."""

from __future__ import annotations

import base64
import hashlib
import io
import ssl
import struct
import zlib
from typing import Any, Dict, List, Optional

import httpx
from PIL import Image

JOINTS = [0.0, -0.5, 0.0, -2.1, 0.0, 1.6, 0.78]


def jpeg_b64(width: int, height: int, color: tuple = (40, 90, 140)) -> str:
    buf = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buf, "JPEG", quality=90)
    return base64.b64encode(buf.getvalue()).decode()


def png_b64(width: int, height: int) -> str:
    buf = io.BytesIO()
    Image.new("RGB", (width, height), (200, 10, 10)).save(buf, "PNG")
    return base64.b64encode(buf.getvalue()).decode()


def lying_png_b64(width: int, height: int) -> str:
    """A 45-byte PNG whose header declares width x height and which holds no pixels at all."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return base64.b64encode(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IEND", b"")).decode()


def flat_png_b64(width: int, height: int) -> str:
    """A real 1-bit PNG of one colour: a few KB even at 4096x4096 (deflate's best case)."""
    buf = io.BytesIO()
    Image.new("1", (width, height)).save(buf, "PNG", optimize=True)
    return base64.b64encode(buf.getvalue()).decode()


_FRAME_CACHE: Dict[tuple, str] = {}


def frame(width: int, height: int) -> str:
    key = (width, height)
    if key not in _FRAME_CACHE:
        _FRAME_CACHE[key] = jpeg_b64(width, height)
    return _FRAME_CACHE[key]


def act_body(model: str = "pi05-droid", views: Optional[List[str]] = None, size: tuple = (224, 224),
             instruction: str = "pick up the cup", joints: Optional[List[float]] = None,
             gripper: Any = (0.0,), seed: Optional[int] = 7, episode_id: Optional[str] = "ep-1") -> Dict[str, Any]:
    views = ["exterior_1", "wrist_left"] if views is None else views
    body: Dict[str, Any] = {
        "model": model,
        "observation": {
            "images": [{"view": v, "data": frame(*size), "timestamp_ms": None} for v in views],
            "proprioception": {"joint_positions": list(JOINTS if joints is None else joints),
                               "joint_velocities": None, "end_effector_pose": None,
                               "gripper": list(gripper) if isinstance(gripper, (list, tuple)) else gripper},
            "instruction": instruction,
        },
    }
    if seed is not None:
        body["seed"] = seed
    if episode_id is not None:
        body["episode_id"] = episode_id
    return body


def gateway(platform: Any, key: Optional[str] = "default") -> httpx.Client:
    headers = {}
    if key:
        headers["Authorization"] = f"Bearer {platform.api_key if key == 'default' else key}"
    return httpx.Client(base_url=platform.base_url, headers=headers, timeout=10.0)


def served_fingerprint(worker_url: str) -> str:
    """SHA-256 of the DER certificate the worker serves, read with the ssl module alone."""
    host, port = worker_url.split("://", 1)[1].rsplit(":", 1)
    der = ssl.get_server_certificate((host, int(port)))
    return hashlib.sha256(ssl.PEM_cert_to_DER_cert(der)).hexdigest()


def connect(platform: Any, model: str = "pi05-droid") -> Dict[str, Any]:
    with gateway(platform) as g:
        r = g.post("/v1/act/connect", json={"model": model, "session": "0" * 32})
        assert r.status_code == 200, r.text
        return r.json()


def worker(answer: Dict[str, Any], secret: Optional[str] = None, rid: str = "r-0000abcd") -> httpx.Client:
    """A client for the worker that checks the pin itself (verify=False, then compare)."""
    assert served_fingerprint(answer["worker_url"]) == answer["cert_fingerprint"]
    return httpx.Client(base_url=answer["worker_url"], verify=False, timeout=10.0,
                        headers={"Authorization": f"Bearer {secret or answer['direct_secret']}",
                                 "X-Seq-Request-Id": rid})
