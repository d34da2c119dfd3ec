"""Beside the node, never imported by it: the demo, the simulated arm, the process launcher."""
