"""run(): the control loop, refills, prefetch timing, stitching, pacing, instructions, the outcome."""
