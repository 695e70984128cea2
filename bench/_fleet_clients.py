"""
The fleet bench's client loops: N Policies, each `run()` in its own thread, order checked.

Each loop is this project's `Policy.run(join='append')` (prefetch, up to two requests in flight)
on a Policy of its own, with a synthetic observation (one rendered scene, encoded once)
whose instruction carries the loop's id and a request sequence number. The gateway's plug-in
(`_fleet_policy`) stamps every action with them, so each loop checks what it really executed:
chunks in observation order, every step of a chunk once and in order, and every request either
answered or failed (none silently lost).

Also runnable as a child process (`python -m bench._fleet_clients --base-url ...`), so that a
fleet can be split over processes when one interpreter's GIL is the limit; the child prints one
JSON object with its loops' results and its own CPU time.
"""

import argparse
from dataclasses import asdict, dataclass
import json
from pathlib import Path
import sys
import threading
import time
from typing import Any
import warnings

from sequence_ai_ros.client import ImageFrame, Transport
from sequence_ai_ros.harness.proc_stats import cpu_seconds
from sequence_ai_ros.harness.stamped_loop import StampedLoop
from sequence_ai_ros.node.images import encode_raw_image
from sequence_ai_ros.sim.render import SceneRenderer
from sequence_ai_ros.world import arm_model

from ._fleet_policy import PREFIX

HERE = Path(__file__).resolve().parent

TARGET_XY = (0.55, -0.2)
DRAIN_S = 30.0  # after run() returns, how long requests still in flight may take to land


def synthetic_frames() -> tuple[str, str]:
    """Render one scene (arm at home, red target) and encode both views as the node would."""
    renderer = SceneRenderer(320, 240)
    frames = []
    for render in (renderer.exterior, renderer.wrist):
        pixels = render(arm_model.HOME, TARGET_XY)
        height, width = pixels.shape[:2]
        frames.append(encode_raw_image('rgb8', width, height, width * 3,
                                       pixels.tobytes()).base64())
    return frames[0], frames[1]


@dataclass
class LoopResult:
    """One loop's run: its RunOutcome fields, the order check and every request's fate."""

    client: int
    outcome: dict[str, Any]
    requested: int
    sent: int
    received: int
    failed: int
    lost: int  # sent, and neither answered nor failed by the end of the drain
    unplayed: int  # answered, never executed, and not the run's last answers
    check: dict[str, Any]
    breaks: int
    timings: list[tuple[float, float | None]]
    error: str = ''


class ClientLoop(StampedLoop):
    """One control loop on its own Policy (its own connection pool), started from a barrier."""

    def __init__(self, client: int, base_url: str, api_key: str, model: str, actions: int,
                 frames: tuple[str, str]) -> None:
        exterior, wrist = frames
        super().__init__(client, Transport(api_key=api_key, base_url=base_url), model,
                         [ImageFrame('exterior_1', exterior), ImageFrame('wrist', wrist)],
                         PREFIX)
        self.client = client
        self.actions = actions
        self.result: LoopResult | None = None

    def run(self, start_at: float) -> None:
        """Wait for the common start, run, drain what is in flight, then close."""
        delay = start_at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        outcome: dict[str, Any] = {}
        error = ''
        try:
            with self.policy:
                result = self.policy.run(self.observe, self.check.act, max_actions=self.actions,
                                         validate=lambda action: True,
                                         join_mode='append')
                outcome = asdict(result)
                # Answers still in flight land on their worker threads; wait for each fate.
                deadline = time.monotonic() + DRAIN_S
                while self.stamps.unresolved() and time.monotonic() < deadline:
                    time.sleep(0.01)
        except Exception as exc:  # noqa: BLE001 (recorded in the row, not fatal to the fleet)
            error = f'{type(exc).__name__}: {exc}'
        self.result = self._result(outcome, error)

    def _result(self, outcome: dict[str, Any], error: str) -> LoopResult:
        policy, check = self.stamps, self.check
        answered = policy.answered | policy.failed
        return LoopResult(
            client=self.client, outcome=outcome, requested=self.requested,
            sent=len(policy.sent), received=len(policy.answered), failed=len(policy.failed),
            lost=len(policy.sent - answered), unplayed=len(self.unplayed()), check=check.breaks(),
            breaks=check.total, timings=list(policy.timings), error=error)


def run_fleet(base_url: str, api_key: str, model: str, clients: list[int], actions: int,
              frames: tuple[str, str], start_at: float) -> tuple[list[LoopResult], list[str]]:
    """Run one loop per client id, each on its own thread, all from `start_at`."""
    loops = [ClientLoop(c, base_url, api_key, model, actions, frames) for c in clients]
    threads = [threading.Thread(target=loop.run, args=(start_at,), name=f'fleet-{loop.client}')
               for loop in loops]
    # The engine's configuration warnings are recorded for the report, not printed 32 times.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return [loop.result for loop in loops if loop.result is not None], \
        [str(w.message) for w in caught]


def main(argv: list[str] | None = None) -> int:
    """Child-process mode: run some loops, print one JSON object with results and CPU time."""
    parser = argparse.ArgumentParser(description='fleet bench worker (run by bench.bench_fleet)')
    parser.add_argument('--base-url', required=True)
    parser.add_argument('--key', required=True)
    parser.add_argument('--model', required=True)
    parser.add_argument('--clients', type=int, nargs='+', required=True)
    parser.add_argument('--actions', type=int, required=True)
    parser.add_argument('--start-at', type=float, required=True,
                        help='time.monotonic() to start at (the clock is system-wide)')
    args = parser.parse_args(argv)
    frames = synthetic_frames()
    cpu0, wall0 = cpu_seconds(), max(time.monotonic(), args.start_at)
    results, caught = run_fleet(args.base_url, args.key, args.model, args.clients,
                                args.actions, frames, args.start_at)
    body = {'cpu_s': cpu_seconds() - cpu0, 'wall_s': time.monotonic() - wall0,
            'results': [asdict(r) for r in results], 'warnings': caught}
    print(json.dumps(body))
    return 0


if __name__ == '__main__':
    sys.exit(main())
