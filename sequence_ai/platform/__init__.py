"""The local Sequences platform: a gateway (HTTP) and a TLS worker on loopback that speak the
client's wire protocol, with stand-in policies, a plug-in for your own, and scriptable faults.

    python -m sequence_ai.platform            # or: sequence-ai serve
    from sequence_ai.platform.spawn import LocalPlatform   # for tests, demos, benchmarks

Needs the `[serve]` extra (fastapi, uvicorn, cryptography, pillow, numpy). The client never
imports this package. See docs/PLATFORM.md.
"""
