"""The node's inputs: the latest camera and joint-state samples, checked, and their images."""
