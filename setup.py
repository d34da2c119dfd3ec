"""pip packaging of the client library `sequence_ai` (metadata in setup.cfg)."""

from setuptools import setup

setup()
