# Two commands for a fresh machine (each sets up what it needs: venv, ROS wheels, colcon build).
.PHONY: demo test bench setup clean

demo:   ## the closed-loop demo on the local platform
	@scripts/workspace.sh demo

test:   ## lint + the whole test suite
	@scripts/workspace.sh test

bench:  ## every benchmark in bench/, with the table in docs/PERFORMANCE.md
	@scripts/workspace.sh bench

setup:  ## only create / update the venv and the colcon build
	@scripts/workspace.sh setup

clean:  ## remove the build (keeps the venv)
	rm -rf .ws
