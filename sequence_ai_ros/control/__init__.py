"""Driving the arm: the control tick, the commands it publishes, their safety checks."""
