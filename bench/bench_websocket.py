"""The openpi link's websocket library, measured (issue #35: wsproto or websockets, "measure the choice").

    scripts/workspace.sh run python bench/bench_websocket.py [--exchanges 200] [--rounds 4] [--gap 0.02]

One websocket server in a subprocess (websockets' asyncio server, this process's interpreter) speaks as an
openpi server does: a metadata frame first, then per request frame one small answer (15×8 float32 actions
and server_timing, msgpack by `sequence_ai._net._msgpack_numpy`, packed once). Each request is DROID's:
two 224×224×3 uint8 views of noise, 7 joint positions, 1 gripper position and the prompt, packed once by
the same codec (~0.3 MB), so both clients send the same bytes and the codec is outside the figures.
In this process, alternating within a round (the order flips each round), each on a fresh connection:

* websockets — our `PolicySocket` (sequence_ai/_net/_websocket.py): `exchange()`, the call a request
  makes, with its bounded receive; its reading thread's CPU counts (process CPU time);
* wsproto    — a minimal client written here for the measurement only: a plain blocking socket, the
  handshake, then per exchange one `BytesMessage` out and events read until the answer is whole.

Per exchange: the process's CPU time (`time.process_time()`, every thread) and the round trip
(`time.perf_counter()`), after `--gap` s idle (a refill thread waits most of a chunk). wsproto comes from
its own scratch venv (requirements/scratch/wsproto.txt, made on first use), appended to sys.path.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common
from table import Row

HZ, ACTIONS_PER_REQUEST = 15.0, 8  # pi05_droid: control_hz, open_loop_horizon
CLIENTS = ("websockets (ours)", "wsproto")
READ_BYTES = 1 << 16


def request_frame() -> bytes:
    import numpy as np

    from sequence_ai._net._msgpack_numpy import pack

    noise = np.random.default_rng(0)
    return pack({"observation/exterior_image_1_left": noise.integers(0, 256, (224, 224, 3), dtype=np.uint8),
                 "observation/wrist_image_left": noise.integers(0, 256, (224, 224, 3), dtype=np.uint8),
                 "observation/joint_position": np.zeros(7), "observation/gripper_position": np.zeros(1),
                 "prompt": "pick up the cup"})


# -- the server (a subprocess) ----------------------------------------------------------------------

def serve(port_file: str) -> None:
    import numpy as np
    from websockets.asyncio.server import serve as ws_serve
    from websockets.exceptions import ConnectionClosed

    from sequence_ai._net._msgpack_numpy import pack, unpack

    metadata = pack({"bench": "websocket"})
    answer = pack({"actions": np.zeros((15, 8), dtype=np.float32), "server_timing": {"infer_ms": 0.0}})

    async def handler(connection: Any) -> None:
        await connection.send(metadata)
        try:
            async for frame in connection:
                if not isinstance(unpack(frame), dict):  # read as openpi's server reads it, then answered
                    raise ValueError("not a map")
                await connection.send(answer)
        except ConnectionClosed:
            pass

    async def main() -> None:
        async with ws_serve(handler, "127.0.0.1", 0, compression=None, max_size=16 << 20, ping_interval=None) as server:
            with open(port_file + ".tmp", "w") as handle:
                handle.write(str(server.sockets[0].getsockname()[1]))
            os.replace(port_file + ".tmp", port_file)
            await asyncio.Future()

    asyncio.run(main())


# -- the two clients --------------------------------------------------------------------------------

class Ours:
    def __init__(self, url: str):
        from sequence_ai._net._websocket import PolicySocket

        self.socket = PolicySocket(url)
        self.socket.open(10.0)

    def exchange(self, frame: bytes) -> bytes:
        return self.socket.exchange(frame, 10.0)

    def close(self) -> None:
        self.socket.close()


class Wsproto:
    """Just enough of a websocket client over wsproto for one request frame and one answer at a time."""

    def __init__(self, url: str):
        from wsproto import ConnectionType, WSConnection
        from wsproto.events import Request

        host, port = url.split("://", 1)[1].rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10.0)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.ws = WSConnection(ConnectionType.CLIENT)
        self.sock.sendall(self.ws.send(Request(host=f"{host}:{port}", target="/")))
        self._until(lambda event: type(event).__name__ == "AcceptConnection")
        self.metadata = self._message()

    def _until(self, done: Callable[[Any], bool]) -> Any:
        while True:
            for event in self.ws.events():
                if done(event):
                    return event
            data = self.sock.recv(READ_BYTES)
            if not data:
                raise ConnectionError("the server closed the connection")
            self.ws.receive_data(data)

    def _message(self) -> bytes:
        from wsproto.events import BytesMessage

        parts: List[bytes] = []
        while True:
            event = self._until(lambda e: isinstance(e, BytesMessage))
            parts.append(bytes(event.data))
            if event.message_finished:
                return b"".join(parts)

    def exchange(self, frame: bytes) -> bytes:
        from wsproto.events import BytesMessage

        self.sock.sendall(self.ws.send(BytesMessage(data=frame)))
        return self._message()

    def close(self) -> None:
        from wsproto.events import CloseConnection

        self.sock.sendall(self.ws.send(CloseConnection(code=1000)))
        self.sock.close()


# -- the measurement --------------------------------------------------------------------------------

def wsproto_path(install: bool) -> Optional[str]:
    """site-packages of .wsproto-venv/ (made first when `install`), or None where there is none."""
    sys.path.insert(0, os.path.join(common.ROOT, "scripts"))
    try:
        import scratch_venv
    finally:
        sys.path.pop(0)
    python = scratch_venv.ensure("wsproto") if install else scratch_venv.made("wsproto")
    if python is None:
        return None
    probe = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()


def measure(exchanges: int = 200, rounds: int = 4, gap_s: float = 0.02, install: bool = True, log=print) -> dict:
    """{client: {"cpu_ms": [...], "rtt_ms": [...]}, "frame_bytes", "versions"}, or {"skipped": why}."""
    path = wsproto_path(install)
    if path is None:
        return {"skipped": "the wsproto scratch venv is not installed (scripts/scratch_venv.py wsproto)"}
    if path not in sys.path:
        sys.path.append(path)  # after the workspace's packages: only wsproto comes from there
    import websockets
    import wsproto

    frame = request_frame()
    figures: Dict[str, Dict[str, List[float]]] = {name: {"cpu_ms": [], "rtt_ms": []} for name in CLIENTS}
    makers = {CLIENTS[0]: Ours, CLIENTS[1]: Wsproto}
    port_file = os.path.join(common.ROOT, ".ws", f"bench-websocket-{os.getpid()}.port")
    os.makedirs(os.path.dirname(port_file), exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), common.ROOT) if p)}
    server = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve", port_file], env=env)
    try:
        if not common.wait_until(lambda: os.path.exists(port_file) or server.poll() is not None, 60.0) \
                or server.poll() is not None:
            raise RuntimeError("the websocket server did not start")
        with open(port_file) as handle:
            url = f"ws://127.0.0.1:{handle.read().strip()}"
        for number in range(rounds):
            for name in (CLIENTS if number % 2 == 0 else CLIENTS[::-1]):
                client = makers[name](url)
                client.exchange(frame)  # warm-up
                for _ in range(exchanges):
                    time.sleep(gap_s)
                    cpu, wall = time.process_time(), time.perf_counter()
                    client.exchange(frame)
                    figures[name]["rtt_ms"].append((time.perf_counter() - wall) * 1000.0)
                    figures[name]["cpu_ms"].append((time.process_time() - cpu) * 1000.0)
                client.close()
                log(f"round {number}: {name:18s} CPU {statistics.median(figures[name]['cpu_ms'][-exchanges:]):.3f} ms, "
                    f"round trip {statistics.median(figures[name]['rtt_ms'][-exchanges:]):.3f} ms (p50 of {exchanges})")
    finally:
        server.kill()
        server.wait(30)
        if os.path.exists(port_file):
            os.remove(port_file)
    return {**figures, "frame_bytes": len(frame), "exchanges": exchanges * rounds,
            "versions": f"websockets {websockets.__version__}, wsproto {wsproto.__version__}"}


def summary(result: dict) -> Dict[str, Dict[str, float]]:
    return {name: {f"{what}_{q}": common.percentile(result[name][what], q) for what in ("cpu_ms", "rtt_ms")
                   for q in (50, 90)} for name in CLIENTS}


def websocket_rows(result: dict) -> List[Row]:
    """Ours (websockets) beside wsproto: reported, no goal — the figures decide the library, not a pass."""
    if "skipped" in result:
        return [Row("websocket library: websockets vs wsproto", f"skipped: {result['skipped']}")]
    figures = summary(result)
    ours, peer = figures[CLIENTS[0]], figures[CLIENTS[1]]
    where = f"a {result['frame_bytes'] / 1e6:.2f} MB request on loopback, p50; peer = wsproto"
    return [Row(f"openpi link, CPU per exchange: websockets (ours) vs wsproto ({where})", f"{ours['cpu_ms_50']:.3f} ms",
                f"{peer['cpu_ms_50']:.3f} ms", f"{ours['cpu_ms_50'] / peer['cpu_ms_50']:.2f}", "reported (no goal)"),
            Row(f"openpi link, round trip: websockets (ours) vs wsproto ({where})", f"{ours['rtt_ms_50']:.3f} ms",
                f"{peer['rtt_ms_50']:.3f} ms", f"{ours['rtt_ms_50'] / peer['rtt_ms_50']:.2f}", "reported (no goal)")]


def report(result: dict) -> None:
    if "skipped" in result:
        print(f"skipped: {result['skipped']}")
        return
    figures = summary(result)
    period_ms = 1000.0 / HZ
    print(f"\n{result['versions']}; request frame {result['frame_bytes']} bytes; {result['exchanges']} exchanges each")
    print(f"{'client':18s} {'CPU ms p50':>11s} {'p90':>8s} {'RTT ms p50':>11s} {'p90':>8s} "
          f"{'CPU % of period/action':>23s}")
    for name in CLIENTS:
        f = figures[name]
        share = 100.0 * f["cpu_ms_50"] / ACTIONS_PER_REQUEST / period_ms
        print(f"{name:18s} {f['cpu_ms_50']:11.3f} {f['cpu_ms_90']:8.3f} {f['rtt_ms_50']:11.3f} {f['rtt_ms_90']:8.3f} "
              f"{share:22.3f}%")
    ours, peer = figures[CLIENTS[0]], figures[CLIENTS[1]]
    print(f"websockets ÷ wsproto: CPU {ours['cpu_ms_50'] / peer['cpu_ms_50']:.2f}, "
          f"round trip {ours['rtt_ms_50'] / peer['rtt_ms_50']:.2f}")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exchanges", type=int, default=200, help="per client per round")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--gap", type=float, default=0.02, help="idle seconds before each exchange")
    parser.add_argument("--json", action="store_true", help="print the raw figures as JSON")
    parser.add_argument("--serve", metavar="PORT_FILE", help=argparse.SUPPRESS)  # the server subprocess
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return 0
    result = measure(args.exchanges, args.rounds, args.gap)
    if args.json:
        print(json.dumps(result))
    report(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
