# What this client is compatible with, then what it is: the public sequence-ai release whose wire and
# API it speaks (0.20.0), and after the `+` (a PEP 440 local label) this project's own release, the
# version in package.xml. A `sequence-ai>=0.20` or `==0.20.0` requirement is met by it as installed;
# no package index can hold a version with a local label, so none is ever taken for this one.
# The gateway reads it in the User-Agent (`sequence-ai-python/0.20.0+ros.0.3.0`).
__version__ = "0.20.0+ros.0.3.0"
