"""pip packaging of the client library `sequence_ai` (metadata in pyproject.toml).

The one compiled part, encode()'s resampler, is optional: where it cannot be built the library
resizes with Pillow alone."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("sequence_ai._vision._resample", ["sequence_ai/_vision/_resample.c"], optional=True,
                             extra_compile_args=["-O3"])])
