"""How big a frame should be when it leaves the robot (docs/PROTOCOL.md §8.2).

The catalogue row decides: `client_resize.size` (letterbox `pad` or `stretch`),
`client_resize.shortest_edge` (shrink only), or nothing (long edge capped at 640).
`plan()` is pure arithmetic and needs no Pillow. `apply()` does the pixels: a uint8 array goes
through the compiled resampler (`_resample.c`: Pillow's taps, within one level of Pillow's result,
several times faster) when it was built and the filter has no negative lobes; everything else
through Pillow's own resampling. Either way the letterbox is openpi's `resize_with_pad`.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from .._errors import InvalidArgument, ObservationMismatch
from .._wire import Model

try:
    from . import _resample as _native  # built with the package; without a compiler, Pillow does it all
except ImportError:  # pragma: no cover - depends on the build
    _native = None

__all__ = ["FILTERS", "LONG_EDGE_CAP", "SizePlan", "apply", "check_aspect", "letterbox", "plan"]

LONG_EDGE_CAP = 640
ASPECT_TOLERANCE_PX = 5  # the band the gateway uses
FILTERS = ("bilinear", "bicubic", "area")
_NAMED_RATIOS = {"16:9": 16 / 9, "4:3": 4 / 3, "3:2": 3 / 2, "1:1": 1.0, "9:16": 9 / 16, "3:4": 3 / 4}


@dataclass(frozen=True)
class SizePlan:
    """What happens to one frame: resize to `resize_to` with `filter`, then (letterbox only)
    paste at `offset` on a black `canvas`. `mode` is keep | pad | stretch | shortest_edge | cap."""

    mode: str
    source: Tuple[int, int]
    resize_to: Tuple[int, int]
    filter: str = "bilinear"
    canvas: Optional[Tuple[int, int]] = None
    offset: Tuple[int, int] = (0, 0)

    @property
    def output(self) -> Tuple[int, int]:
        return self.canvas or self.resize_to


def _ratio_name(ratio: float) -> str:
    for name, value in _NAMED_RATIOS.items():
        if abs(ratio - value) <= 0.01 * value:
            return f"{name} ({ratio:.4g})"
    return f"{ratio:.4g}"


def check_aspect(width: int, height: int, trained_ratio: Optional[float], square: int, model_name: str = "the model") -> None:
    """ValueError when a w×h frame, fitted into `square`, lands more than 5 px off the trained
    ratio's extent. The fix is a crop (the caller decides what to give up), never a pad."""
    if not trained_ratio or trained_ratio <= 0:
        return
    ratio = width / height
    extent = square / ratio if ratio >= 1 else square * ratio
    trained = square / trained_ratio if trained_ratio >= 1 else square * trained_ratio
    if abs(extent - trained) > ASPECT_TOLERANCE_PX:
        side = "rows" if ratio >= 1 else "columns"
        raise ObservationMismatch(
            f"frame {width}x{height} has aspect ratio {_ratio_name(ratio)} but {model_name} was trained on "
            f"{_ratio_name(trained_ratio)}: fitted into {square} px it would fill {extent:.0f} {side} where "
            f"training filled {trained:.0f}. Crop the frame to {_ratio_name(trained_ratio)} before sending it; "
            "do not pad it (padding shifts the bars the model learned)"
        )


def letterbox(width: int, height: int, canvas_w: int, canvas_h: int) -> Tuple[Tuple[int, int], Tuple[int, int]]:
    """openpi's resize_with_pad geometry: ((w', h'), (x, y)) — truncating division, centred."""
    ratio = max(width / canvas_w, height / canvas_h)
    new_w = max(1, int(width / ratio))
    new_h = max(1, int(height / ratio))
    return (new_w, new_h), (max(0, int((canvas_w - new_w) / 2)), max(0, int((canvas_h - new_h) / 2)))


def _positive_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value or value < 1:
        raise ValueError(f"catalogue {what} must be a positive integer (got {value!r})")
    return int(value)


def plan(width: int, height: int, model: Optional[Model] = None) -> SizePlan:
    """The sizing for a `width`×`height` frame sent to `model` (None: only the 640 cap)."""
    source = (int(width), int(height))
    if source[0] < 1 or source[1] < 1:
        raise InvalidArgument(f"frame has no pixels ({width}x{height})")
    resize: Optional[Dict[str, Any]] = model.client_resize if model is not None else None
    if not resize:
        long_edge = max(source)
        if long_edge <= LONG_EDGE_CAP:
            return SizePlan("keep", source, source)
        scale = LONG_EDGE_CAP / long_edge
        target = (max(1, round(source[0] * scale)), max(1, round(source[1] * scale)))
        return SizePlan("cap", source, target, filter="lanczos")

    name = model.short_id if model is not None else "the model"
    if "size" in resize:
        size = resize["size"]
        if not isinstance(size, (list, tuple)) or len(size) != 2:
            raise ValueError(f"catalogue client_resize.size of {name} must be [width, height] (got {size!r})")
        target = (_positive_int(size[0], "client_resize.size"), _positive_int(size[1], "client_resize.size"))
        mode = "pad" if (model.input_resize or "pad") == "pad" else "stretch"
        if model.input_resize not in (None, "pad", "stretch"):
            raise ValueError(f"catalogue input_resize of {name} is {model.input_resize!r}; known: pad, stretch")
    elif "shortest_edge" in resize:
        edge = _positive_int(resize["shortest_edge"], "client_resize.shortest_edge")
        short = min(source)
        if short <= edge:
            return SizePlan("keep", source, source)
        scale = edge / short
        target = (max(1, round(source[0] * scale)), max(1, round(source[1] * scale)))
        mode = "shortest_edge"
    else:
        raise ValueError(f"catalogue client_resize of {name} has neither size nor shortest_edge: {resize!r}")

    if source == target:
        return SizePlan("keep", source, source)
    filter_name = resize.get("filter") or "bilinear"
    if filter_name not in FILTERS:
        raise ValueError(f"catalogue filter {filter_name!r} of {name} is not one of {', '.join(FILTERS)}")
    check_aspect(source[0], source[1], model.input_aspect_ratio, max(target), name)
    if mode == "pad":
        inner, offset = letterbox(source[0], source[1], target[0], target[1])
        if inner == target:  # same ratio as the canvas: nothing to pad
            return SizePlan("pad", source, target, filter_name)
        return SizePlan("pad", source, inner, filter_name, canvas=target, offset=offset)
    return SizePlan(mode, source, target, filter_name)


# --- pixels (Pillow, imported lazily by the caller) ---------------------------------------

_pool: Optional[ThreadPoolExecutor] = None
_pool_lock = threading.Lock()
_BAND_MIN_PIXELS = 400_000  # below this a thread hand-off costs more than it saves


def _threads() -> int:
    """Bands resized in parallel: $SEQUENCES_ENCODE_THREADS, else half the CPUs (at most 4) on
    a machine with 4 or more, else 1 — on 2 CPUs the second band competes with the control loop
    and measured no faster (docs/OBSERVATIONS.md)."""
    configured = os.environ.get("SEQUENCES_ENCODE_THREADS")
    if configured is not None:
        try:
            return max(1, int(configured))
        except ValueError:
            return 1
    cpus = os.cpu_count() or 1
    return min(4, cpus // 2) if cpus >= 4 else 1


def _band_pool(workers: int) -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sequence-ai-resize")
        return _pool


def _bands(out_h: int, pixels: int, threads: int) -> list:
    """Row ranges [a, b) of the output, one per thread when the frame is big enough to pay."""
    if threads < 2 or pixels < _BAND_MIN_PIXELS or out_h < 2 * threads:
        return [(0, out_h)]
    cuts = [round(out_h * k / threads) for k in range(threads + 1)]
    return list(zip(cuts, cuts[1:]))


_NATIVE_FILTERS = {"bilinear": 0, "area": 1}  # non-negative taps only: see _resample.c


def _native_resize(array: Any, size_plan: SizePlan) -> Optional[Any]:
    """The planned resize of an H×W or H×W×3/4 uint8 array (RGBA: alpha ignored) by the compiled
    resampler, as a Pillow image; None where it does not apply."""
    code = _NATIVE_FILTERS.get(size_plan.filter)
    if _native is None or code is None:
        return None
    import numpy as np
    from PIL import Image

    if array.ndim == 3 and array.shape[2] == 1:
        array = array[:, :, 0]
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    height, width = array.shape[:2]
    pixel_stride = 1 if array.ndim == 2 else array.shape[2]
    channels = 1 if pixel_stride == 1 else 3
    out_w, out_h = size_plan.resize_to
    canvas_w, canvas_h = size_plan.output
    canvas = bytearray(canvas_w * canvas_h * channels)  # zeros: the letterbox bars are black
    args = (array, height, width, array.strides[0], pixel_stride, channels, canvas, canvas_w, canvas_h,
            size_plan.offset[0], size_plan.offset[1], out_w, out_h, code)
    bands = _bands(out_h, width * height, _threads())
    futures = [_band_pool(len(bands)).submit(_native.resample_into, *args, a, b) for a, b in bands[1:]]
    _native.resample_into(*args, *bands[0])  # the GIL is released while it runs
    for future in futures:
        future.result()
    # bytes: Pillow 9.0 (Humble's) decodes raw pixels from nothing else (a copy: ~2 µs at 224×224)
    image = Image.frombuffer("L" if channels == 1 else "RGB", (canvas_w, canvas_h), bytes(canvas), "raw",
                             "L" if channels == 1 else "RGB", 0, 1)
    return image if channels == 3 else image.convert("RGB")


def _resample(image: Any, size: Tuple[int, int], resample: int, banded: bool) -> Any:
    """Pillow's resize, optionally split into horizontal bands resized in parallel.

    Pillow clips filter taps against the whole image, not the box, so each band computes exactly
    the rows the full resize would (its filters reach zero weight at their support edge, which
    makes the split safe; the box filter does not, so it is never banded)."""
    width, height = image.size
    out_w, out_h = size
    bands = _bands(out_h, width * height, _threads() if banded else 1)
    if len(bands) == 1:
        return image.resize(size, resample)
    step = height / out_h
    pool = _band_pool(len(bands))
    futures = [pool.submit(image.resize, (out_w, b - a), resample, (0.0, a * step, float(width), b * step))
               for a, b in bands[1:]]
    a, b = bands[0]
    first = image.resize((out_w, b - a), resample, (0.0, a * step, float(width), b * step))
    from PIL import Image

    out = Image.new(image.mode, size)
    out.paste(first, (0, 0))
    for (top, _), future in zip(bands[1:], futures):
        out.paste(future.result(), (0, top))
    return out


def apply(pixels: Any, size_plan: SizePlan) -> Any:
    """The planned resize (and letterbox) of a uint8 array (H×W, H×W×3, H×W×4: alpha ignored) or
    a Pillow RGB image, as a Pillow RGB image."""
    from PIL import Image

    if not isinstance(pixels, Image.Image):
        if size_plan.mode != "keep":
            sized = _native_resize(pixels, size_plan)
            if sized is not None:
                return sized
        image = Image.fromarray(pixels)
        image = image if image.mode == "RGB" else image.convert("RGB")
    else:
        image = pixels
    if size_plan.mode == "keep":
        return image
    named = getattr(Image, "Resampling", Image)  # Pillow < 9.1 (Ubuntu 22.04's 9.0.1): the module's own names
    filters = {"bilinear": named.BILINEAR, "bicubic": named.BICUBIC, "area": named.BOX, "lanczos": named.LANCZOS}
    resample = filters[size_plan.filter]
    resized = _resample(image, size_plan.resize_to, resample, banded=size_plan.filter != "area")
    if size_plan.canvas is None:
        return resized
    canvas = Image.new(image.mode, size_plan.canvas, 0)
    canvas.paste(resized, size_plan.offset)
    return canvas
