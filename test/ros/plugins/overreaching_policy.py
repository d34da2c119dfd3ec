"""A user's policy (loaded by the local worker with --policy) that asks the arm to jump: every row
moves joint 2 half a radian from where the arm is, far beyond one control period's reach."""


def rows(inp):
    horizon = int(inp.model["action_horizon"])
    return [[0.0, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0] for _ in range(horizon)]
