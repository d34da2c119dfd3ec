"""A recording process for the SIGKILL test: records commands (and frames every 10th) until
killed, or for 60 s at most. Command i is [i, i/2, -i]."""

from __future__ import annotations

import base64
import sys
import time

from sequence_ai.recording import Recorder

path, flush_interval_s = sys.argv[1], float(sys.argv[2])
recorder = Recorder(path, flush_interval_s=flush_interval_s)
recorder.run_started(model="pi05-droid", episode_id="killed")
frame = base64.b64encode(b"\xff\xd8\xff" + bytes(100)).decode()  # small: no chunk fills up by size
deadline = time.monotonic() + 60.0
i = 0
while time.monotonic() < deadline:
    i += 1
    if i % 10 == 1:
        rid = f"r-{i:08x}"
        recorder.observation(rid, {"images": [{"view": "wrist", "data": frame}],
                                   "proprioception": {"joint_positions": [float(i)]}})
        recorder.request(rid, "keep going", actions_at_submit=i - 1)
    recorder.command([float(i), i / 2, -float(i)], rid=rid, row_index=(i - 1) % 10)
    time.sleep(0.005)
recorder.close()
