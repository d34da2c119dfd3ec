"""encode() of 1280×720 camera frames vs the reference path: resize + Pillow JPEG q95.

    python bench/bench_encode.py [--frames 20] [--repeats 15] [--markdown] [--candidates]

Run it through `scripts/workspace.sh run` so the built package (with its compiled resampler)
is imported; `make bench` runs it in `.bench-venv/`, where openpi-client is installed. The pi0.5
reference is openpi_client.image_tools.resize_with_pad when openpi-client is importable,
otherwise an independent implementation of its definition, and the table says which. The other models' reference is Pillow's resize with the row's filter
(what the 0.20.0 client did). Max |Δ| compares pixels before JPEG.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import platform
import sys
import time
from typing import Any, Callable, List, Optional, Tuple

import numpy as np
from PIL import Image

sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # after an install tree

from sequence_ai import Model, encode
from sequence_ai._vision import _resize

try:
    from openpi_client import image_tools as openpi_image_tools
except ImportError:
    openpi_image_tools = None

ROWS = {
    "pi05-droid": {"id": "m/pi05-droid", "input_resize": "pad", "input_aspect_ratio": 1.7778,
                   "client_resize": {"size": [224, 224], "filter": "bilinear"}},
    "cosmos3-edge-policy-droid": {"id": "m/cosmos3-edge-policy-droid", "input_resize": "stretch",
                                  "input_aspect_ratio": 1.7778,
                                  "client_resize": {"size": [640, 360], "filter": "bilinear"}},
    "groot-n1-7-3b-droid": {"id": "m/groot-n1-7-3b-droid", "client_resize": {"shortest_edge": 256, "filter": "area"}},
    "no client_resize (640 cap)": {"id": "m/perceive"},
}
PIL_FILTER = {"bilinear": Image.BILINEAR, "area": Image.BOX, "lanczos": Image.LANCZOS, "bicubic": Image.BICUBIC}


def camera_frame(seed: int, width: int = 1280, height: int = 720) -> np.ndarray:
    """Gradients, flat patches with hard edges, and sensor noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    image = np.stack([x / width * 255, y / height * 255, (x + y) / (width + height) * 255], -1)
    for _ in range(30):
        x0, y0 = int(rng.integers(0, width)), int(rng.integers(0, height))
        image[y0:y0 + int(rng.integers(3, 320)), x0:x0 + int(rng.integers(3, 180))] = rng.integers(0, 256, 3)
    image += rng.normal(0, 12, image.shape)
    return np.clip(image, 0, 255).astype(np.uint8)


def definition_resize_with_pad(frame: np.ndarray, width: int, height: int) -> np.ndarray:
    """openpi's resize_with_pad from its definition (used when openpi-client is not installed)."""
    source = Image.fromarray(frame)
    ratio = max(source.width / width, source.height / height)
    new_w, new_h = int(source.width / ratio), int(source.height / ratio)
    canvas = Image.new("RGB", (width, height), 0)
    canvas.paste(source.resize((new_w, new_h), Image.BILINEAR),
                 (max(0, int((width - new_w) / 2)), max(0, int((height - new_h) / 2))))
    return np.asarray(canvas)


def reference_pixels(frame: np.ndarray, model: Model) -> np.ndarray:
    size_plan = _resize.plan(frame.shape[1], frame.shape[0], model)
    if size_plan.mode == "pad":
        w, h = size_plan.output
        if openpi_image_tools is not None:
            return openpi_image_tools.resize_with_pad(frame, h, w)
        return definition_resize_with_pad(frame, w, h)
    if size_plan.mode == "keep":
        return frame
    return np.asarray(Image.fromarray(frame).resize(size_plan.resize_to, PIL_FILTER[size_plan.filter]))


def reference_encode(frame: np.ndarray, model: Model) -> str:
    buffer = io.BytesIO()
    Image.fromarray(reference_pixels(frame, model)).save(buffer, "JPEG", quality=95)
    return base64.b64encode(buffer.getvalue()).decode()


def per_frame_ms(calls: List[Callable[[Any], object]], frames: List[Any], repeats: int) -> List[float]:
    """Best round of each call, in ms per frame. Rounds interleave the calls so that load from
    other processes hits all of them alike; the minimum is the least-disturbed round."""
    for call in calls:
        for frame in frames[:3]:
            call(frame)  # warm caches and the thread pool
    best = [float("inf")] * len(calls)
    for _ in range(repeats):
        for index, call in enumerate(calls):
            started = time.perf_counter()
            for frame in frames:
                call(frame)
            best[index] = min(best[index], (time.perf_counter() - started) / len(frames))
    return [value * 1000 for value in best]


def with_threads(threads: str, call: Callable[[np.ndarray], object]) -> Callable[[np.ndarray], object]:
    def run(frame: np.ndarray) -> object:
        os.environ["SEQUENCES_ENCODE_THREADS"] = threads
        return call(frame)
    return run


def candidates(frames: List[np.ndarray], repeats: int) -> None:
    """Other ways to do the pi0.5 resize (1280x720 -> 224x126), timed and compared with Pillow's."""
    size = (224, 126)
    images = [Image.fromarray(frame) for frame in frames]
    reference = [np.asarray(image.resize(size, Image.BILINEAR)).astype(int) for image in images]
    model = Model.from_wire(ROWS["pi05-droid"])
    plan = _resize.plan(1280, 720, model)
    tried: List[Tuple[str, Callable[[int], np.ndarray]]] = [
        ("Pillow resize (reference)", lambda i: np.asarray(images[i].resize(size, Image.BILINEAR))),
        ("Pillow reduce(2) + bilinear", lambda i: np.asarray(images[i].reduce(2).resize(size, Image.BILINEAR))),
        ("Pillow reducing_gap=2.0", lambda i: np.asarray(images[i].resize(size, Image.BILINEAR, reducing_gap=2.0))),
        ("Pillow reducing_gap=3.0", lambda i: np.asarray(images[i].resize(size, Image.BILINEAR, reducing_gap=3.0))),
    ]
    for threads in ("2", "4"):
        def banded(i: int, threads: str = threads) -> np.ndarray:
            os.environ["SEQUENCES_ENCODE_THREADS"] = threads
            return np.asarray(_resize._resample(images[i], plan.resize_to, Image.BILINEAR, banded=True))
        tried.append((f"Pillow resize in {threads} bands on threads", banded))
    try:
        import cv2

        tried.append(("cv2.resize INTER_LINEAR", lambda i: cv2.resize(frames[i], size, interpolation=cv2.INTER_LINEAR)))
        tried.append(("cv2.resize INTER_AREA", lambda i: cv2.resize(frames[i], size, interpolation=cv2.INTER_AREA)))
    except ImportError:
        print("# opencv not installed: its candidates are skipped")
    indices = list(range(len(frames)))
    times = per_frame_ms([lambda i, f=f: f(i) for _, f in tried], indices, repeats)  # type: ignore[misc]
    print("| candidate (1280x720 -> 224x126) | ms | max |Δ| vs Pillow |")
    print("|---|---|---|")
    for (name, call), ms in zip(tried, times):
        worst = max(int(np.abs(call(i).astype(int) - reference[i]).max()) for i in indices)
        print(f"| {name} | {ms:.2f} | {worst} |")


def measure(frame_count: int = 20, repeats: int = 15) -> List[dict]:
    """One dict per catalogue row: reference and encode() ms per 1280x720 frame (best round), the
    speed-up against the better of 1 and N threads, and the max pixel difference before JPEG."""
    frames = [camera_frame(seed) for seed in range(frame_count)]
    threads = str(max(2, min(4, os.cpu_count() or 1)))
    results: List[dict] = []
    saved = os.environ.get("SEQUENCES_ENCODE_THREADS")
    try:
        for name, row in ROWS.items():
            model = Model.from_wire(row)
            worst = 0
            for frame in frames:
                ours = np.asarray(_resize.apply(frame, _resize.plan(1280, 720, model))).astype(int)
                worst = max(worst, int(np.abs(ours - reference_pixels(frame, model).astype(int)).max()))
            size = "x".join(map(str, _resize.plan(1280, 720, model).output))
            ref_ms, one_ms, many_ms = per_frame_ms(
                [lambda f, m=model: reference_encode(f, m),
                 with_threads("1", lambda f, m=model: encode(f, m)),
                 with_threads(threads, lambda f, m=model: encode(f, m))],
                frames, repeats)
            results.append({"model": name, "size": size, "reference_ms": ref_ms, "one_thread_ms": one_ms,
                            "threads": int(threads), "threads_ms": many_ms, "speedup": ref_ms / min(one_ms, many_ms),
                            "max_delta": worst, "reference": reference_name(), "resampler": resampler_name()})
    finally:
        if saved is None:
            os.environ.pop("SEQUENCES_ENCODE_THREADS", None)
        else:
            os.environ["SEQUENCES_ENCODE_THREADS"] = saved
    return results


def resampler_name() -> str:
    return "compiled (_resample.c)" if _resize._native is not None else "Pillow (the compiled resampler is not built)"


def reference_name() -> str:
    if openpi_image_tools is not None:
        return "openpi_client resize_with_pad"
    return "resize_with_pad (definition, openpi-client not installed)"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=20, help="distinct frames per round (default 20)")
    parser.add_argument("--repeats", type=int, default=15, help="rounds; the best is reported (default 15)")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    parser.add_argument("--candidates", action="store_true", help="also time other resize methods for pi0.5")
    parser.add_argument("--json", action="store_true", help="print the measurements as one JSON list (for run_all)")
    args = parser.parse_args(argv)
    if args.candidates:
        frames = [camera_frame(seed) for seed in range(args.frames)]
        saved_threads = os.environ.get("SEQUENCES_ENCODE_THREADS")
        candidates(frames, args.repeats)
        os.environ.pop("SEQUENCES_ENCODE_THREADS", None)
        if saved_threads is not None:
            os.environ["SEQUENCES_ENCODE_THREADS"] = saved_threads
        print()
    if args.json:
        print(json.dumps(measure(args.frames, args.repeats)))
        return 0
    results = measure(args.frames, args.repeats)
    threads = results[0]["threads"]
    reference_name = results[0]["reference"]
    print(f"# bench_encode: 1280x720 frames, {args.frames} frames x {args.repeats} rounds (best round), "
          f"Python {platform.python_version()}, Pillow {Image.__version__}, numpy {np.__version__}, "
          f"{os.cpu_count()} CPUs")
    print(f"# pi05 reference: {reference_name}; others: Pillow resize with the row's filter; all + Pillow JPEG q95")
    print(f"# our resampler: {results[0]['resampler']}")
    header = ("model", "size", "reference ms", "encode() 1 thread ms", f"encode() {threads} threads ms",
              "speed-up (best)", "max |Δ| before JPEG")
    rows = [(r["model"], r["size"], f"{r['reference_ms']:.2f}", f"{r['one_thread_ms']:.2f}", f"{r['threads_ms']:.2f}",
             f"{r['speedup']:.2f}x", str(r["max_delta"])) for r in results]
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
        for row in (header, *rows):
            print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
