"""The e-stop: the topic, every publisher on it, and the take of its queued samples."""
