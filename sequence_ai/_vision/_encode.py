"""One camera frame → the base64 JPEG a model expects (docs/PROTOCOL.md §8.2).

Strings pass through untouched (assumed base64 already sized by the caller), bytes are
base64-encoded as they are, arrays and PIL images are sized for the model (`_resize`) and
JPEG-encoded at quality 95. Arrays and PIL images need the `[image]` extra.
"""

from __future__ import annotations

import base64
import io
from typing import Any, Optional, Union

from .._errors import InvalidArgument, InvalidArgumentType, SequencesError
from .._extras import install_hint
from .._wire import Model
from ._resize import apply, plan

__all__ = ["DEFAULT_JPEG_QUALITY", "ImageExtraMissing", "encode", "to_pixels"]

DEFAULT_JPEG_QUALITY = 95  # what every model's own server decodes well; keep it at 90 or above
INSTALL_HINT = install_hint("image")


class ImageExtraMissing(SequencesError, ImportError):
    """Pillow (or numpy) is not installed; arrays and PIL images need the `[image]` extra."""


def _pillow() -> Any:
    try:
        from PIL import Image
    except ImportError:
        raise ImageExtraMissing(
            f"encoding an array or PIL image needs Pillow: {INSTALL_HINT} "
            "(or pass frames already encoded as base64 JPEG strings)"
        ) from None
    return Image


def to_pixels(frame: Any) -> Any:
    """A Pillow RGB image as it is (other modes converted), or an H×W / H×W×1 / H×W×3 / H×W×4
    uint8 array, checked, as an array (the resizer reads arrays without a Pillow copy)."""
    image_module = _pillow()
    if isinstance(frame, image_module.Image):
        return frame if frame.mode == "RGB" else frame.convert("RGB")
    shape = getattr(frame, "shape", None)
    dtype = getattr(frame, "dtype", None)
    if shape is None or dtype is None:
        raise InvalidArgumentType(
            "a frame must be a base64 str, encoded JPEG/PNG bytes, a numpy array or a PIL image "
            f"(got {type(frame).__name__})"
        )
    if str(dtype) != "uint8":
        raise InvalidArgumentType(
            f"array frames must be uint8 (got {dtype}); convert first, e.g. "
            "(frame * 255).clip(0, 255).astype('uint8') for floats in [0, 1]"
        )
    if len(shape) == 2 or (len(shape) == 3 and shape[2] in (1, 3, 4)):
        try:
            import numpy as np
        except ImportError:
            raise ImageExtraMissing(f"array frames need numpy: {INSTALL_HINT}") from None
        array = np.asarray(frame)
        return array[:, :, 0] if array.ndim == 3 and array.shape[2] == 1 else array
    raise InvalidArgument(f"array frames must be H×W, H×W×3 (RGB) or H×W×4 (RGBA) (got shape {tuple(shape)})")


def encode(frame: Any, model: Union[Model, str, None] = None, *, quality: int = DEFAULT_JPEG_QUALITY) -> str:
    """`frame` as the base64 string the model expects: sized per the catalogue row of `model`
    (letterbox, stretch, shortest edge, or the 640 long-edge cap without a model), JPEG at
    `quality` (keep it at 90 or above). A str is returned unchanged, bytes are only base64-encoded."""
    if isinstance(frame, str):
        return frame
    if isinstance(frame, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(frame)).decode("ascii")
    if isinstance(quality, bool) or not isinstance(quality, int) or not 1 <= quality <= 100:
        raise InvalidArgument(f"quality must be an int from 1 to 100 (got {quality!r}); 95 is the default")
    row: Optional[Model] = None
    if model is not None:
        from .._catalogue._models import resolve_model

        row = resolve_model(model, endpoint=None)
    pixels = to_pixels(frame)
    width, height = (pixels.shape[1], pixels.shape[0]) if hasattr(pixels, "shape") else pixels.size
    sized = apply(pixels, plan(width, height, row))
    buffer = io.BytesIO()
    sized.save(buffer, format="JPEG", quality=quality)
    return base64.b64encode(buffer.getvalue()).decode("ascii")
