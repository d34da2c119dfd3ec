"""One worker session: admission, the pinned /act calls with their replay rules, telemetry."""
