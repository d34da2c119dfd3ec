"""Frames and observations: building, checking, resizing and encoding what the model sees."""
