"""How the executables start (sequence_ai_ros/executables.py): a Ctrl-C that lands while the
executable's modules are still being imported ends the process cleanly, whatever the imported code
does with the exception a signal handler raises inside it.

The CI run that found it: sim_robot, interrupted while numpy's compiled core imported `datetime`
from C, died of numpy's ImportError (status 1, a traceback) instead of exiting 0. Here the same
shape is made on purpose by a module that presses Ctrl-C on itself while it imports and, as
numpy's core does, turns whatever interrupts it into an ImportError."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

# An executable module that is interrupted while it imports, and hides the interruption as an
# ImportError the way compiled code can. Its main() must never run: the Ctrl-C came first.
_SWALLOWING_MODULE = textwrap.dedent("""
    import os, signal, time
    try:
        os.kill(os.getpid(), signal.SIGINT)
        deadline = time.monotonic() + 0.3  # the handler (if SIGINT is not held back) runs in here
        while time.monotonic() < deadline:
            time.sleep(0.01)
    except BaseException as exc:
        raise ImportError(f"interrupted while importing: {type(exc).__name__}") from exc

    def main():
        print("main ran")
        return 0
""")

_STARTER = textwrap.dedent("""
    import sys
    from sequence_ai_ros import executables
    executables.EXECUTABLES["interrupted"] = "interrupted_while_importing"
    sys.exit(executables.run("interrupted"))
""")


def test_ctrl_c_while_the_modules_import_exits_0_even_if_the_import_would_swallow_it(tmp_path):
    (tmp_path / "interrupted_while_importing.py").write_text(_SWALLOWING_MODULE)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), root]))
    done = subprocess.run([sys.executable, "-c", _STARTER], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "main ran" not in done.stdout  # the Ctrl-C held back during the import lands before main()
